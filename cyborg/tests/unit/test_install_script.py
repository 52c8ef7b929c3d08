"""tools/install.sh says plainly when the package index cannot be reached.

Run into a new virtualenv with pip pointed at a closed local port (and its
configuration files ignored, so no local wheel directory can serve), the
install must fail with the index named, not with pip's misleading
ResolutionImpossible alone.
"""

import os
import shutil
import subprocess
import tempfile

from cyborg.tests import base
from cyborg.tests.fixtures import processes

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                    '..'))


class TestInstallScript(base.TestCase):

    def test_an_unreachable_index_is_named(self):
        directory = tempfile.mkdtemp(prefix='cyborg-install-')
        self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
        index = 'http://127.0.0.1:%d/simple' % processes.free_port()
        env = dict(os.environ, PIP_CONFIG_FILE=os.devnull,
                   PIP_INDEX_URL=index, PIP_RETRIES='0',
                   PIP_DISABLE_PIP_VERSION_CHECK='1',
                   CYBORG_VENV=os.path.join(directory, 'venv'))
        for name in ('PIP_FIND_LINKS', 'PIP_EXTRA_INDEX_URL',
                     'PIP_CONSTRAINT', 'PIP_NO_INDEX'):
            env.pop(name, None)
        result = subprocess.run(
            [os.path.join(ROOT, 'tools', 'install.sh'), '--runtime'],
            capture_output=True, text=True, env=env, timeout=300)
        self.assertEqual(1, result.returncode, result.stdout + result.stderr)
        self.assertIn('the Python package index %s cannot be reached'
                      % index, result.stderr)
        self.assertIn('Installing cyborg and its requirements ...',
                      result.stdout)
        self.assertFalse(os.path.exists(os.path.join(
            directory, 'venv', '.cyborg-installed-runtime')))
