"""A cyborg.conf written for OpenStack Cyborg, read by this project.

Renamed options are read under their new names with one deprecation
warning each; options nothing reads are listed in one warning, never an
error. cyborg.tests.functional.services.test_upstream_conf_processes
starts the services themselves with such a file.
"""

import json
import logging
import os
import subprocess

import fixtures
from oslo_config import cfg

from cyborg import conf
from cyborg.conf import drivers
from cyborg.conf import opts
from cyborg.conf import upstream
from cyborg.tests import base
from cyborg.tests.fixtures import skips
from cyborg.tests.fixtures import upstream_conf

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
GENERATOR_CONF = os.path.join(ROOT, 'etc', 'cyborg',
                              'cyborg-config-generator.conf')
# A Python with openstack-cyborg 17.0.0 installed, to compare the option
# list of the fixture with upstream's own.
UPSTREAM_PYTHON_VARIABLE = 'CYBORG_UPSTREAM_PYTHON'
# Where tools/run-tests.sh says it built upstream's virtualenv.
UPSTREAM_VENV_VARIABLE = 'CYBORG_UPSTREAM_VENV'
UPSTREAM_PYTHON_GUESS = os.path.join(ROOT, '.upstream-cyborg-venv', 'bin',
                                     'python')

_UPSTREAM_LIST = '''
import json
from cyborg.conf import opts
print(json.dumps(sorted({(getattr(group, "name", group), opt.dest)
                         for group, options in opts.list_opts()
                         for opt in options})))
'''


class UpstreamConfTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.directory = self.useFixture(fixtures.TempDir()).path
        self.path = upstream_conf.write(self.directory)
        self.logger = self.useFixture(fixtures.FakeLogger(
            level=logging.WARNING, format='%(name)s %(message)s'))

    def _read(self, *paths, config_dir=None):
        args = []
        for path in paths:
            args += ['--config-file', path]
        if config_dir:
            args += ['--config-dir', config_dir]
        conf.CONF(args, project='cyborg', default_config_files=[])
        # The agent registers the group of the driver it loads.
        if 'nvidia_gpu_driver' not in conf.CONF:
            drivers.register_opts(conf.CONF, drivers.nvidia_gpu_group)

    def _warnings(self, text):
        return [line for line in self.logger.output.splitlines()
                if text in line]


class TestRenamedOptions(UpstreamConfTestCase):

    def test_the_table_is_what_our_options_declare(self):
        declared = {}
        for group, options in opts.list_opts():
            for opt in options:
                for old in opt.deprecated_opts:
                    declared[(old.group or group, old.name or opt.dest)] = (
                        group, opt.dest)
        for old, new in upstream.RENAMED.items():
            self.assertEqual(new, declared.get(old), old)

    def test_values_are_read_under_our_names(self):
        self._read(self.path)
        mapped = upstream_conf.MAPPED
        self.assertEqual(mapped[('DEFAULT', 'bind_timeout')],
                         conf.CONF.conductor.bind_timeout)
        self.assertEqual(mapped[('DEFAULT', 'thread_pool_size')],
                         conf.CONF.conductor.bind_workers)
        self.assertEqual(mapped[('DEFAULT', 'periodic_interval')],
                         conf.CONF.agent.report_interval)
        self.assertEqual([mapped[('gpu_devices', 'enabled_vgpu_types')]],
                         conf.CONF.nvidia_gpu_driver.enabled_vgpu_types)

    def test_a_value_under_our_name_wins(self):
        ours = os.path.join(self.directory, 'ours.conf')
        with open(ours, 'w') as config_file:
            config_file.write('[conductor]\nbind_timeout = 200\n')
        self._read(self.path, ours)
        self.assertEqual(200, conf.CONF.conductor.bind_timeout)

    def test_each_rename_is_one_warning_naming_old_and_new(self):
        self._read(self.path)
        for _ in range(3):
            self.assertEqual(3, conf.CONF.conductor.bind_workers)
            self.assertEqual(1, conf.CONF.agent.report_interval)
        self.assertEqual(
            ['oslo_config.cfg Deprecated: Option "thread_pool_size" from '
             'group "DEFAULT" is deprecated. Use option "bind_workers" from '
             'group "conductor".'],
            self._warnings('"thread_pool_size"'))
        self.assertEqual(1, len(self._warnings('"periodic_interval"')))

    def test_glance_tls_options_keep_their_older_names(self):
        older = os.path.join(self.directory, 'older.conf')
        with open(older, 'w') as config_file:
            config_file.write('[ssl]\nca_file = /etc/ssl/ca.pem\n'
                              '[glance]\napi_insecure = true\n')
        self._read(older)
        self.assertEqual('/etc/ssl/ca.pem', conf.CONF.glance.cafile)
        self.assertTrue(conf.CONF.glance.insecure)
        self.assertEqual([], upstream.unknown_options(conf.CONF))

    def test_pybasedir_substitutions_resolve(self):
        self._read(self.path)
        conf.CONF.clear_override('state_path')  # the test base's
        self.assertEqual(self.directory, conf.CONF.state_path)
        self.assertEqual(os.path.join(self.directory, 'lock'),
                         conf.CONF.oslo_concurrency.lock_path)


class TestUnknownOptions(UpstreamConfTestCase):

    def test_one_warning_lists_every_unknown_option(self):
        self._read(self.path)
        self.assertEqual(upstream_conf.unknown_names(),
                         upstream.warn_unknown_options(conf.CONF))
        warnings = self._warnings('does not know')
        self.assertEqual(1, len(warnings), self.logger.output)
        self.assertIn('Ignoring %d option(s)' % len(upstream_conf.UNKNOWN),
                      warnings[0])
        for name in upstream_conf.unknown_names():
            self.assertIn(name, warnings[0])

    def test_our_own_and_the_libraries_options_are_known(self):
        ours = os.path.join(self.directory, 'ours.conf')
        with open(ours, 'w') as config_file:
            config_file.write(
                '[DEFAULT]\ndebug = true\ntransport_url = rabbit://\n'
                'report_interval = 5\n'
                '[conductor]\nbind_timeout = 100\n'
                '[database]\nconnection = sqlite://\n'
                '[keystone_authtoken]\nauth_type = password\n'
                'www_authenticate_uri = http://k\nusername = cyborg\n'
                '[placement]\nauth_type = admin_token\ntoken = t\n'
                'endpoint = http://p\n'
                '[nova]\nauth_type = v3applicationcredential\n'
                'application_credential_id = x\n'
                '[oslo_messaging_rabbit]\nheartbeat_timeout_threshold = 30\n'
                '[oslo_policy]\nenforce_new_defaults = true\n'
                '[aio]\nplacement_port = 8779\n'
                '[pci_driver]\npassthrough_whitelist = []\n'
                '[quota]\ndriver = noop\n[oslo_limit]\nendpoint_id = e\n')
        self._read(ours)
        self.assertEqual([], upstream.warn_unknown_options(conf.CONF))
        self.assertEqual([], self._warnings('does not know'))

    def test_a_misspelt_option_is_reported_not_refused(self):
        ours = os.path.join(self.directory, 'ours.conf')
        with open(ours, 'w') as config_file:
            config_file.write('[api]\nprot = 7777\n[nova]\nauth_type = '
                              'password\nusernam = cyborg\n')
        self._read(ours)
        self.assertEqual(['[api] prot', '[nova] usernam'],
                         upstream.warn_unknown_options(conf.CONF))

    def test_the_files_of_a_config_dir_are_read(self):
        config_dir = os.path.join(self.directory, 'cyborg.conf.d')
        os.mkdir(config_dir)
        with open(os.path.join(config_dir, '10-upstream.conf'), 'w') as f:
            f.write('[api]\nenable_ssl_api = true\n')
        self._read(config_dir=config_dir)
        self.assertEqual(['[api] enable_ssl_api'],
                         upstream.unknown_options(conf.CONF))

    def test_no_file_no_warning(self):
        self._read()
        self.assertEqual([], upstream.warn_unknown_options(conf.CONF))
        self.assertEqual('', self.logger.output)

    def test_a_failure_to_list_them_is_no_error(self):
        self._read(self.path)
        self.useFixture(fixtures.MockPatch(
            'cyborg.conf.upstream._catalog', side_effect=RuntimeError))
        self.assertEqual([], upstream.warn_unknown_options(conf.CONF))

    def test_namespaces_are_those_of_the_sample(self):
        sections = {}
        parser = cfg.ConfigParser(GENERATOR_CONF, sections)
        parser.parse()
        self.assertEqual(list(upstream.NAMESPACES),
                         sections['DEFAULT']['namespace'])


class TestUpstreamOptionList(base.TestCase):
    """The fixture's file sets every option of upstream's own list."""

    def test_the_fixture_covers_upstream_s_option_list(self):
        python = os.environ.get(UPSTREAM_PYTHON_VARIABLE)
        if python is None and os.environ.get(UPSTREAM_VENV_VARIABLE):
            python = os.path.join(os.environ[UPSTREAM_VENV_VARIABLE],
                                  'bin', 'python')
        python = python or UPSTREAM_PYTHON_GUESS
        if not os.path.exists(python):
            # tools/run-tests.sh builds it: under CI its absence fails.
            skips.missing('no openstack-cyborg 17.0.0 to compare with '
                          '(%s): run tools/upstream-cyborg-venv.sh or set %s '
                          'to its Python' % (python, UPSTREAM_PYTHON_VARIABLE))
        # Its own cyborg package, not this one on PYTHONPATH.
        env = {name: value for name, value in os.environ.items()
               if name != 'PYTHONPATH'}
        result = subprocess.run([python, '-c', _UPSTREAM_LIST],
                                capture_output=True, text=True, cwd='/',
                                env=env, timeout=120)
        self.assertEqual(0, result.returncode, result.stderr)
        upstream_names = {tuple(pair) for pair in json.loads(result.stdout)}
        written = {(group, name) for group, values in
                   upstream_conf.options('/tmp').items() for name in values}
        self.assertEqual(set(), upstream_names - written)
