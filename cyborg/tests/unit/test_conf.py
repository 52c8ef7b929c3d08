"""The option groups, their upstream-compatible names, and the sample config."""

import os
import subprocess
import sys
import tempfile

from cyborg import conf
from cyborg.conf import opts
from cyborg.tests import base

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
GENERATOR_CONF = os.path.join(ROOT, 'etc', 'cyborg', 'cyborg-config-generator.conf')
SAMPLE = os.path.join(ROOT, 'etc', 'cyborg', 'cyborg.conf.sample')


class TestOptionNames(base.TestCase):

    def test_upstream_option_names_are_kept(self):
        """An operator's existing cyborg.conf keeps working."""
        expected = {
            'api': ['host_ip', 'port', 'api_workers', 'public_endpoint'],
            'agent': ['enabled_drivers'],
            'database': ['connection'],
            'placement': ['auth_type', 'region_name', 'valid_interfaces'],
            'glance': ['auth_type', 'endpoint_override'],
            'nova': ['auth_type', 'region_name'],
            'service_user': ['send_service_user_token', 'auth_type'],
            'keystone_authtoken': ['www_authenticate_uri', 'auth_type',
                                   'service_token_roles'],
        }
        for group, names in expected.items():
            for name in names:
                self.assertIn(name, conf.CONF[group], '[%s] %s' % (group, name))
        self.assertEqual(6666, conf.CONF.api.port)
        self.assertEqual(['fake_driver'], conf.CONF.agent.enabled_drivers)
        self.assertIn('host', conf.CONF)

    def test_config_file_values_are_read(self):
        with tempfile.NamedTemporaryFile('w', suffix='.conf', delete=False) as f:
            f.write('[DEFAULT]\nhost = compute-7\n[api]\nport = 7777\n'
                    '[agent]\nenabled_drivers = fake_driver,pci_driver\n')
        self.addCleanup(os.unlink, f.name)
        conf.CONF(['--config-file', f.name], project='cyborg',
                  default_config_files=[])
        self.assertEqual('compute-7', conf.CONF.host)
        self.assertEqual(7777, conf.CONF.api.port)
        self.assertEqual(['fake_driver', 'pci_driver'], conf.CONF.agent.enabled_drivers)

    def test_list_opts_covers_cyborg_groups_once(self):
        groups = [name for name, _ in opts.list_opts()]
        self.assertEqual(len(groups), len(set(groups)))
        for group in ('DEFAULT', 'api', 'agent', 'conductor', 'placement',
                      'glance', 'nova', 'service_user'):
            self.assertIn(group, groups)
        # Library-owned groups come from the library's own namespace.
        self.assertNotIn('database', groups)
        self.assertNotIn('keystone_authtoken', groups)


class TestSampleConfig(base.TestCase):

    def test_generator_output_matches_committed_sample(self):
        """etc/cyborg/cyborg.conf.sample is regenerated with every option change."""
        with tempfile.TemporaryDirectory() as tmp:
            output = os.path.join(tmp, 'cyborg.conf.sample')
            generator = os.path.join(os.path.dirname(sys.executable),
                                     'oslo-config-generator')
            subprocess.run([generator, '--config-file', GENERATOR_CONF,
                            '--output-file', output],
                           check=True, capture_output=True, cwd=ROOT)
            with open(output) as f:
                generated = f.read()
        for section in ('[DEFAULT]', '[api]', '[agent]', '[database]',
                        '[keystone_authtoken]', '[placement]', '[nova]',
                        '[glance]', '[service_user]', '[oslo_messaging_rabbit]'):
            self.assertIn(section, generated)
        self.assertIn('#port = 6666', generated)
        with open(SAMPLE) as f:
            committed = f.read()
        self.assertEqual(
            committed, generated,
            'etc/cyborg/cyborg.conf.sample is out of date: run '
            '"oslo-config-generator --config-file %s"' % GENERATOR_CONF)


class TestSamplePolicy(base.TestCase):

    def test_generator_output_matches_committed_sample(self):
        """etc/cyborg/policy.yaml.sample is regenerated with every rule change."""
        generator_conf = os.path.join(ROOT, 'etc', 'cyborg', 'cyborg-policy-generator.conf')
        committed_path = os.path.join(ROOT, 'etc', 'cyborg', 'policy.yaml.sample')
        with tempfile.TemporaryDirectory() as tmp:
            output = os.path.join(tmp, 'policy.yaml.sample')
            generator = os.path.join(os.path.dirname(sys.executable),
                                     'oslopolicy-sample-generator')
            subprocess.run([generator, '--config-file', generator_conf,
                            '--output-file', output],
                           check=True, capture_output=True, cwd=ROOT)
            with open(output) as f:
                generated = f.read()
        self.assertIn('"cyborg:arq:update"', generated)
        with open(committed_path) as f:
            committed = f.read()
        self.assertEqual(
            committed, generated,
            'etc/cyborg/policy.yaml.sample is out of date: run '
            '"oslopolicy-sample-generator --config-file %s"' % generator_conf)
