"""Read a tempest run's subunit stream and judge it against the known list.

``expected-failures.txt`` (next to this file) names the tests that fail on
purpose, one per line: the test id without its ``[...]`` attributes, then
``|`` and the reason. A run is good when every other test passed or was
skipped and every listed test failed: a listed test that passes means the
list is out of date, which is an error too.
"""

import dataclasses
import io
import os
import re

import subunit
import testtools

EXPECTED_FAILURES = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                 'expected-failures.txt')
PASSED = ('success', 'xfail')
FAILED = ('fail', 'uxsuccess')
# "test_x[id-...,negative]" -> "test_x"; class fixtures keep their form,
# e.g. "setUpClass (cyborg_tempest_plugin.tests.api.test_x.TestX)".
_ATTRIBUTES = re.compile(r'\[[^\]]*\]$')


def load_expected_failures(path=EXPECTED_FAILURES):
    """{test id: reason} from the file; '#' starts a comment line."""
    expected = {}
    with open(path, encoding='utf-8') as listing:
        for number, line in enumerate(listing, 1):
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            test_id, separator, reason = line.partition('|')
            if not separator or not reason.strip():
                raise ValueError('%s:%d: expected "<test id> | <reason>"'
                                 % (path, number))
            expected[test_id.strip()] = reason.strip()
    return expected


def plain_id(test_id):
    """The test id without tempest's bracketed attributes."""
    return _ATTRIBUTES.sub('', test_id)


def read_subunit(stream):
    """{plain test id: status} of a subunit v2 byte string."""
    statuses = {}

    def on_test(test):
        statuses[plain_id(test['id'])] = test['status']

    case = subunit.ByteStreamToStreamResult(io.BytesIO(stream),
                                            non_subunit_name='stdout')
    result = testtools.StreamToDict(on_test)
    result.startTestRun()
    try:
        case.run(result)
    finally:
        result.stopTestRun()
    return statuses


@dataclasses.dataclass
class Verdict:
    """What one run gave, and what in it breaks the rule."""

    name: str
    passed: list
    skipped: list
    expected_failures: list
    unexpected_failures: list
    unexpected_passes: list

    @property
    def ok(self):
        return not (self.unexpected_failures or self.unexpected_passes)

    ran: int = 0

    def summary(self):
        lines = ['%s: %d of %d passed, %d failed as expected, %d unexpected '
                 'failure(s), %d expected failure(s) passing, %d skipped'
                 % (self.name, len(self.passed), self.ran,
                    len(self.expected_failures),
                    len(self.unexpected_failures),
                    len(self.unexpected_passes), len(self.skipped))]
        for test_id in self.unexpected_failures:
            lines.append('  FAILED (not in expected-failures.txt): %s'
                         % test_id)
        for test_id in self.unexpected_passes:
            lines.append('  NOT FAILING (listed in expected-failures.txt; '
                         'remove it): %s' % test_id)
        return '\n'.join(lines)


def judge(name, statuses, expected):
    """The Verdict of ``statuses`` ({test id: status}) against ``expected``."""
    verdict = Verdict(name, [], [], [], [], [])
    for test_id, status in sorted(statuses.items()):
        if status != 'skip':
            verdict.ran += 1
        if status in FAILED:
            if test_id in expected:
                verdict.expected_failures.append(test_id)
            else:
                verdict.unexpected_failures.append(test_id)
        elif status in PASSED:
            if test_id in expected:
                verdict.unexpected_passes.append(test_id)
            else:
                verdict.passed.append(test_id)
        elif status == 'skip':
            verdict.skipped.append(test_id)
        else:
            # 'exists' or 'inprogress': the test never finished.
            verdict.unexpected_failures.append('%s (%s)' % (test_id, status))
    for test_id in sorted(set(expected) - set(statuses)):
        verdict.unexpected_passes.append('%s (did not run)' % test_id)
    return verdict
