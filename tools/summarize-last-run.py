"""Print the last stestr run as one line: 'N passed, N failed, N skipped'."""

import io
import subprocess
import sys

import subunit
import testtools


def main():
    stream = subprocess.run([sys.executable, '-m', 'stestr', 'last', '--subunit'],
                            capture_output=True, check=True).stdout
    counts = {'success': 0, 'fail': 0, 'skip': 0}

    def on_test(test):
        status = test['status']
        if status in ('success', 'xfail'):
            counts['success'] += 1
        elif status == 'skip':
            counts['skip'] += 1
        elif status in ('fail', 'uxsuccess'):
            counts['fail'] += 1

    case = subunit.ByteStreamToStreamResult(io.BytesIO(stream))
    result = testtools.StreamToDict(on_test)
    result.startTestRun()
    case.run(result)
    result.stopTestRun()
    print('tests: %d passed, %d failed, %d skipped'
          % (counts['success'], counts['fail'], counts['skip']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
