"""What a node installs: the all-in-one's servers only with the ``aio``
extra.

requirements.txt (what ``pip install .`` installs on every node, a compute
node's agent included) holds none of the servers the all-in-one embeds;
setup.cfg's ``aio`` extra does, and tools/install.sh installs it for the
all-in-one and the tests. The services other than cyborg-aio import
without them (checked in a process where importing them fails).
"""

import configparser
import os
import re
import subprocess
import sys

from cyborg.tests import base

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                    '..'))
# Distributions only the all-in-one needs, and the modules they provide.
AIO_ONLY = {'openstack-placement': 'placement', 'glance': 'glance',
            'glance-store': 'glance_store', 'keystone': 'keystone'}
# Every entry point but the all-in-one's.
SERVICE_MODULES = ('cyborg.cmd.agent', 'cyborg.cmd.conductor',
                   'cyborg.cmd.api', 'cyborg.wsgi.api', 'cyborg.cmd.dbsync',
                   'cyborg.cmd.status', 'cyborg.cmd.bitstream')
# Imports them with AIO_ONLY's modules made unimportable; prints what fails.
BLOCKED_IMPORTS = '''
import importlib, importlib.abc, sys
BLOCKED = set(sys.argv[1].split(','))
class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] in BLOCKED:
            raise ImportError('%s is not installed' % name)
sys.meta_path.insert(0, Blocked())
for module in sys.argv[2:]:
    try:
        importlib.import_module(module)
    except ImportError as error:
        print('%s: %s' % (module, error))
'''


def requirement_names(lines):
    """The distribution names of requirement lines, normalized."""
    names = []
    for line in lines:
        line = line.split('#', 1)[0].strip()
        if line:
            name = re.match(r'[A-Za-z0-9_.-]+', line).group(0)
            names.append(re.sub(r'[-_.]+', '-', name).lower())
    return names


def setup_extras():
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, 'setup.cfg'))
    return {name: requirement_names(value.splitlines())
            for name, value in config['extras'].items()}


class TestInstallExtras(base.TestCase):

    def test_base_requirements_hold_no_aio_server(self):
        with open(os.path.join(ROOT, 'requirements.txt')) as requirements:
            names = requirement_names(requirements)
        self.assertIn('oslo-messaging', names)
        self.assertEqual([], sorted(set(names) & set(AIO_ONLY)))

    def test_the_aio_extra_holds_them(self):
        self.assertEqual(['openstack-placement', 'glance'],
                         setup_extras()['aio'])

    def test_install_script_installs_the_extra(self):
        with open(os.path.join(ROOT, 'tools', 'install.sh')) as script:
            text = script.read()
        # --runtime (tools/aio.sh) and the test tools.
        self.assertIn("-e '.[aio]'", text)
        self.assertIn("-e '.[aio,mysql,psycopg]'", text)

    def _failed_imports(self, modules):
        result = subprocess.run(
            [sys.executable, '-c', BLOCKED_IMPORTS,
             ','.join(AIO_ONLY.values())] + list(modules),
            capture_output=True, text=True, timeout=120, cwd=ROOT)
        self.assertEqual(0, result.returncode, result.stderr)
        return result.stdout.splitlines()

    def test_services_import_without_the_aio_servers(self):
        self.assertEqual([], self._failed_imports(SERVICE_MODULES))

    def test_the_all_in_one_needs_them(self):
        # The check can fail: cyborg-aio does import Placement.
        failed = self._failed_imports(['cyborg.cmd.aio'])
        self.assertEqual(1, len(failed))
        self.assertRegex(failed[0], r'^cyborg\.cmd\.aio: (placement|glance)')
