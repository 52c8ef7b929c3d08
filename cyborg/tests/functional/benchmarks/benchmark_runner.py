"""The common part of the benchmark tests: run a script, read its lines.

A benchmark under ``benchmarks/`` runs as a process of its own, as an
operator runs it, in its ``--quick`` mode. A test case names the script and
how long a run may take; :meth:`BenchmarkTestCase.run_script` returns what
the script printed and :meth:`BenchmarkTestCase.line` picks one labelled
line of it apart.
"""

import os
import re
import subprocess
import sys

from testtools import content

import cyborg
from cyborg.tests import base

BENCHMARKS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    cyborg.__file__))), 'benchmarks')
NUMBER = r'[0-9]+(?:\.[0-9]+)?'


class BenchmarkTestCase(base.TestCase):
    """Runs ``benchmarks/<script>`` with ``--quick``; both set by a subclass."""

    script = None
    timeout = None

    def run_script(self, *arguments):
        """The script's standard output; its output is a detail of the test."""
        path = os.path.join(BENCHMARKS, self.script)
        result = subprocess.run(
            [sys.executable, path, '--quick'] + list(arguments),
            stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=self.timeout, cwd=BENCHMARKS)
        self.addDetail('stdout', content.text_content(result.stdout))
        self.addDetail('stderr', content.text_content(result.stderr))
        self.assertEqual(0, result.returncode)
        return result.stdout

    def line(self, output, label, pattern):
        """The groups of ``pattern`` on the line starting with ``label``."""
        match = re.search(r'^%s\s+%s' % (re.escape(label), pattern), output,
                          re.MULTILINE)
        self.assertIsNotNone(match, 'no line %r in the output' % label)
        return match.groups()
