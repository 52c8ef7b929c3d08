"""Why a server could not listen on its address, said in one line.

The API's server, the all-in-one's Placement and the metrics exporters of
the conductor and the agent raise ``ListenError`` when their port cannot
be bound; the entry points print its message and exit.
"""

import errno
import re


class ListenError(OSError):
    """A server could not listen on its address: one line that says which
    service, which address, why, and which option moves it."""

    def __init__(self, name, host, port, reason, option=None):
        message = '%s cannot listen on %s:%s: %s' % (name, host, port, reason)
        if option:
            message += '; set %s to another port' % option
        super().__init__(message)
        self.message = message

    def __str__(self):
        return self.message


def failure_reason(error):
    """Why ``error`` (an OSError of a bind) happened, in words: the
    system's message of the last errno it names."""
    if error.errno == errno.EADDRINUSE:
        return 'the port is already in use'
    if error.errno is not None and error.strerror:
        return error.strerror
    # cheroot folds the errors of each address it tried into one message.
    named = re.findall(r'\[Errno (\d+)\] ([^)]*)', str(error))
    if named and int(named[-1][0]) == errno.EADDRINUSE:
        return 'the port is already in use'
    if named:
        return named[-1][1]
    return str(error)
