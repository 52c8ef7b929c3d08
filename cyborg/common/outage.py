"""An outage of something a process depends on, logged once as it starts
and once as it ends.

A service that lost its database tries again and again meanwhile (its
heartbeat, the bind sweep, each RPC request it serves): each try that
fails is counted here, not logged. The first failure logs one warning,
without a traceback; the first success after it logs one more, with how
long the outage lasted and how many tries failed. Whoever handles the
failure of a try stays silent about it (or logs at debug level).

``cyborg.db.api.OUTAGE`` is the database's, fed by every outermost
transaction; places that learn of a lost database otherwise (an agent told
so by the conductor) report to the same one. A failure is counted once
however many places see it.
"""

import logging
import threading
import time

LOG = logging.getLogger(__name__)

# Set on an error once counted, so that the places it passes through on its
# way up count it once.
_COUNTED = '_cyborg_outage_counted'


class Outage:
    """The outages of one dependency in this process, one at a time.

    ``what`` names it in the log (``'the database'``). ``listeners`` are
    called with True when an outage starts and False when it ends, in the
    thread that saw it: they must not block (set an event, no more).
    """

    def __init__(self, what, clock=time.monotonic):
        self.what = what
        self._clock = clock
        self._lock = threading.Lock()
        self._since = None
        self._failures = 0
        self._listeners = []

    @property
    def ongoing(self):
        """Whether the last try failed and none has succeeded since."""
        return self._since is not None

    def listen(self, listener):
        """Call ``listener(started)`` at each start and end of an outage."""
        with self._lock:
            self._listeners.append(listener)

    def unlisten(self, listener):
        """Stop calling ``listener``."""
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def failed(self, error):
        """Count a try that failed with ``error``; the first of an outage
        logs it. Returns whether this one started an outage."""
        if getattr(error, _COUNTED, False):
            return False
        try:
            setattr(error, _COUNTED, True)
        except AttributeError:
            pass
        with self._lock:
            self._failures += 1
            if self._since is not None:
                return False
            self._since = self._clock()
            listeners = list(self._listeners)
        # One line: an error from another service (over RPC) carries that
        # service's traceback after its message.
        LOG.warning('Outage of %s: %s. Tries are counted, not logged, '
                    'until it answers again.', self.what,
                    str(error).split('\n', 1)[0])
        for listener in listeners:
            listener(True)
        return True

    def answered(self):
        """A try succeeded: end the outage, if any, and log how it went.
        Returns whether one ended."""
        if self._since is None:
            # Without the lock: the path of every transaction.
            return False
        with self._lock:
            if self._since is None:
                return False
            lasted = self._clock() - self._since
            failures = self._failures
            self._since = None
            self._failures = 0
            listeners = list(self._listeners)
        LOG.warning('End of the outage of %s after %.1f s; %d tr%s '
                    'failed meanwhile.', self.what, lasted, failures,
                    'y' if failures == 1 else 'ies')
        for listener in listeners:
            listener(False)
        return True
