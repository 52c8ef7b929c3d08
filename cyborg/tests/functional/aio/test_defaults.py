"""The all-in-one's defaults: complete with no config file, and any value
from a config file wins over them.
"""

import os

import fixtures
from oslo_config import cfg

from cyborg.aio import conf as aio_conf
from cyborg.aio import launcher
from cyborg import conf as cyborg_conf
from cyborg.tests import base


class TestAllInOneDefaults(base.TestCase):

    def setUp(self):
        super().setUp()
        self.directory = self.useFixture(fixtures.TempDir()).path
        # A ConfigOpts of the test's own: set_default lasts as long as it.
        self.conf = cfg.ConfigOpts()
        for module in cyborg_conf.MODULES:
            module.register_opts(self.conf)

    def _parse(self, config_text=None, environ=None):
        aio_conf.set_defaults(self.conf, environ=environ or {},
                              cwd=self.directory)
        arguments = []
        if config_text is not None:
            path = os.path.join(self.directory, 'aio.conf')
            with open(path, 'w') as config_file:
                config_file.write(config_text)
            arguments = ['--config-file', path]
        self.conf(arguments, project='cyborg', default_config_files=[],
                  default_config_dirs=[])
        return self.conf

    def test_defaults_without_a_config_file(self):
        conf = self._parse()

        state_dir = os.path.join(self.directory, '.aio')
        self.assertEqual(state_dir, conf.aio.state_dir)
        self.assertEqual('sqlite:///%s/cyborg.sqlite' % state_dir,
                         conf.database.connection)
        self.assertEqual('fake://', conf.transport_url)
        self.assertEqual('noauth', conf.auth_strategy)
        self.assertEqual(('127.0.0.1', 6666),
                         (conf.api.host_ip, conf.api.port))
        # The page on a port browsers open; every service's metrics.
        self.assertEqual(6680, conf.api.fleet_page_port)
        self.assertTrue(conf.metrics.enabled)
        self.assertEqual(['fake_driver'], conf.agent.enabled_drivers)
        # The copy the all-in-one makes of its fleet at its first start,
        # reported every 10 s.
        self.assertEqual(os.path.join(state_dir, 'fleet.yaml'),
                         conf.agent.fake_inventory)
        self.assertTrue(os.path.isfile(aio_conf.FLEET_PATH))
        self.assertEqual(10, conf.agent.report_interval)
        self.assertEqual('admin_token', conf.placement.auth_type)
        self.assertEqual('http://127.0.0.1:8778', conf.placement.endpoint)
        self.assertEqual('admin', conf.placement.token)
        self.assertTrue(conf.aio.embedded_placement)

    def test_state_dir_from_the_environment(self):
        state_dir = os.path.join(self.directory, 'elsewhere')

        conf = self._parse(
            environ={aio_conf.STATE_DIR_ENVIRONMENT: state_dir})

        self.assertEqual(state_dir, conf.aio.state_dir)
        self.assertEqual('sqlite:///%s/cyborg.sqlite' % state_dir,
                         conf.database.connection)

    def test_config_file_values_win(self):
        conf = self._parse(
            '[DEFAULT]\ntransport_url = rabbit://guest:guest@127.0.0.1//\n'
            'auth_strategy = keystone\n'
            '[api]\nport = 7777\nfleet_page_port = 7780\n'
            '[metrics]\nenabled = false\n'
            '[database]\nconnection = sqlite:////tmp/other.sqlite\n'
            '[agent]\nenabled_drivers = fake_driver,other_driver\n'
            'fake_inventory = /etc/cyborg/my-fleet.yaml\n')

        self.assertEqual('rabbit://guest:guest@127.0.0.1//',
                         conf.transport_url)
        self.assertEqual('keystone', conf.auth_strategy)
        self.assertEqual(7777, conf.api.port)
        self.assertEqual(7780, conf.api.fleet_page_port)
        self.assertFalse(conf.metrics.enabled)
        self.assertEqual('127.0.0.1', conf.api.host_ip)
        self.assertEqual('sqlite:////tmp/other.sqlite',
                         conf.database.connection)
        self.assertEqual(['fake_driver', 'other_driver'],
                         conf.agent.enabled_drivers)
        self.assertEqual('/etc/cyborg/my-fleet.yaml', conf.agent.fake_inventory)

    def test_placement_endpoint_follows_the_embedded_placement(self):
        conf = self._parse('[aio]\nplacement_port = 18778\n'
                           'state_dir = %s/from-file\n' % self.directory)

        self.assertEqual('http://127.0.0.1:18778', conf.placement.endpoint)
        self.assertEqual(
            'sqlite:///%s/from-file/cyborg.sqlite' % self.directory,
            conf.database.connection)

    def test_configured_placement_auth_wins(self):
        conf = self._parse('[aio]\nembedded_placement = false\n'
                           '[placement]\nauth_type = password\n'
                           'auth_url = http://keystone.example:5000/v3\n')

        self.assertFalse(conf.aio.embedded_placement)
        self.assertEqual('password', conf.placement.auth_type)

    def test_the_fleet_is_copied_once_into_the_state_directory(self):
        conf = self._parse()
        fleet = conf.agent.fake_inventory
        aio = launcher.AllInOne(conf)

        os.makedirs(conf.aio.state_dir)
        aio._copy_fleet(conf.aio.state_dir)
        with open(aio_conf.FLEET_PATH) as default, open(fleet) as copy:
            self.assertEqual(default.read(), copy.read())
        # A user's edit survives the next start.
        with open(fleet, 'a') as copy:
            copy.write('# edited\n')
        aio._copy_fleet(conf.aio.state_dir)
        with open(fleet) as copy:
            self.assertTrue(copy.read().endswith('# edited\n'))

    def test_a_fleet_of_ones_own_is_not_replaced(self):
        conf = self._parse('[agent]\nfake_inventory = %s/mine.yaml\n'
                           % self.directory)
        os.makedirs(conf.aio.state_dir)
        launcher.AllInOne(conf)._copy_fleet(conf.aio.state_dir)
        self.assertEqual([], os.listdir(conf.aio.state_dir))
