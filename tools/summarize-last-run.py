"""Print the last stestr run as one line: 'N passed, N failed, N skipped'.

Skips are counted by reason. A test skipped because a server it needs is
missing (cyborg.tests.fixtures.skips words every such reason alike) counts
under that server and where it was looked for, and the line ends with the
command that starts the servers::

    tests: 151 passed, 0 failed, 72 skipped: 36 because MariaDB is not
    running at 127.0.0.1:3306, 36 because PostgreSQL is not running at
    127.0.0.1:5432; run tools/start-services.sh to start MariaDB and
    PostgreSQL

(one line). Other skips count under their reason's first words.
"""

import collections
import io
import re
import subprocess
import sys

import subunit
import testtools

START_COMMAND = 'tools/start-services.sh'
# What cyborg.tests.fixtures.skips says of a missing server.
_SERVER_MISSING = re.compile(
    r'^(?P<key>(?P<server>\S+) is not (?:running at \S+|installed)) '
    r'\(.*\); ' + re.escape(START_COMMAND) + r' (?:starts|installs) it$',
    re.DOTALL)
# At most this much of another reason names its group.
MAX_REASON = 80


def _reason_text(test):
    reason = test['details'].get('reason')
    if reason is None:
        return ''
    return ''.join(reason.iter_text()).strip()


def skip_group(reason):
    """``(group, server)``: what a skip of ``reason`` counts under, and the
    missing server it names (None for another reason)."""
    found = _SERVER_MISSING.match(reason)
    if found:
        return found.group('key'), found.group('server')
    first = reason.splitlines()[0] if reason else 'no reason given'
    first = first.split(' (', 1)[0].rstrip(' .;:')
    if len(first) > MAX_REASON:
        first = first[:MAX_REASON - 3] + '...'
    return first, None


def _and(names):
    names = list(names)
    if len(names) < 2:
        return ''.join(names)
    return '%s and %s' % (', '.join(names[:-1]), names[-1])


def summarize(stream):
    """The summary line of a subunit v2 ``stream`` (bytes)."""
    counts = {'success': 0, 'fail': 0, 'skip': 0}
    skipped = collections.Counter()
    servers = []

    def on_test(test):
        status = test['status']
        if status in ('success', 'xfail'):
            counts['success'] += 1
        elif status == 'skip':
            counts['skip'] += 1
            group, server = skip_group(_reason_text(test))
            skipped[group] += 1
            if server is not None and server not in servers:
                servers.append(server)
        elif status in ('fail', 'uxsuccess'):
            counts['fail'] += 1

    case = subunit.ByteStreamToStreamResult(io.BytesIO(stream))
    result = testtools.StreamToDict(on_test)
    result.startTestRun()
    case.run(result)
    result.stopTestRun()
    line = ('tests: %d passed, %d failed, %d skipped'
            % (counts['success'], counts['fail'], counts['skip']))
    if skipped:
        ordered = sorted(skipped.items(), key=lambda item: (-item[1],
                                                            item[0]))
        line += ': ' + ', '.join('%d because %s' % (count, group)
                                 for group, count in ordered)
    if servers:
        line += '; run %s to start %s' % (START_COMMAND, _and(sorted(servers)))
    return line


def main():
    stream = subprocess.run([sys.executable, '-m', 'stestr', 'last', '--subunit'],
                            capture_output=True, check=True).stdout
    print(summarize(stream))
    return 0


if __name__ == '__main__':
    sys.exit(main())
