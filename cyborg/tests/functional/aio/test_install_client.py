"""tools/install.sh --client puts ``openstack accelerator`` into the
all-in-one's virtualenv, pinned by constraints.txt, without the test tools.

A new virtualenv whose runtime part is recorded as installed (so that only
the client is installed: the runtime's own install is what tools/aio.sh
runs every day) gets python-openstackclient and python-cyborgclient from
the package index pip is configured with, at constraints.txt's versions;
its ``openstack`` then knows the accelerator commands.
"""

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

from cyborg.tests import base

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                    '..', '..'))
INSTALL_TIMEOUT = 900


def stamp(*names):
    """What tools/install.sh records for a part made of files ``names``."""
    digest = hashlib.sha256()
    for name in names:
        with open(os.path.join(ROOT, name), 'rb') as part:
            digest.update(part.read())
    return digest.hexdigest() + '\n'


def pinned(name):
    """The version constraints.txt pins ``name`` to."""
    with open(os.path.join(ROOT, 'constraints.txt')) as constraints:
        match = re.search(r'^%s===?([^\s;]+)' % re.escape(name),
                          constraints.read(), re.MULTILINE)
    return match.group(1)


class TestInstallClient(base.TestCase):

    def test_client_into_the_all_in_ones_virtualenv(self):
        directory = tempfile.mkdtemp(prefix='cyborg-install-client-')
        self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
        venv = os.path.join(directory, 'venv')
        subprocess.run([sys.executable, '-m', 'venv', venv], check=True,
                       timeout=120)
        with open(os.path.join(venv, '.cyborg-installed-runtime'),
                  'w') as runtime:
            runtime.write(stamp('requirements.txt', 'constraints.txt',
                                'setup.cfg'))
        env = dict(os.environ, CYBORG_VENV=venv)
        result = subprocess.run(
            [os.path.join(ROOT, 'tools', 'install.sh'), '--client'],
            capture_output=True, text=True, env=env, timeout=INSTALL_TIMEOUT)
        self.assertEqual(0, result.returncode, result.stdout + result.stderr)
        self.assertIn('Installing the command-line client', result.stdout)
        self.assertIn('Installed client into %s.' % venv, result.stdout)

        freeze = subprocess.run(
            [os.path.join(venv, 'bin', 'python'), '-m', 'pip', 'freeze'],
            capture_output=True, text=True, check=True, timeout=120).stdout
        installed = dict(re.findall(r'^([A-Za-z0-9_.-]+)==(\S+)$', freeze,
                                    re.MULTILINE))
        names = {name.lower().replace('_', '-'): version
                 for name, version in installed.items()}
        for name in ('python-openstackclient', 'python-cyborgclient'):
            self.assertEqual(pinned(name), names.get(name), name)
        # No test tool came with it.
        for name in ('stestr', 'keystone', 'testtools', 'gabbi'):
            self.assertNotIn(name, names)

        listed = subprocess.run(
            [os.path.join(venv, 'bin', 'openstack'), 'command', 'list',
             '--group', 'accelerator', '-f', 'value'],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(0, listed.returncode, listed.stderr)
        self.assertIn('accelerator device list', listed.stdout)
        self.assertIn('accelerator arq create', listed.stdout)

        # Run again: the part is recorded, nothing is installed.
        again = subprocess.run(
            [os.path.join(ROOT, 'tools', 'install.sh'), '--client'],
            capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(0, again.returncode, again.stderr)
        self.assertNotIn('Installing', again.stdout)
