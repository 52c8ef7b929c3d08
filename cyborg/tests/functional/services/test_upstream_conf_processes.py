"""The services started with an OpenStack Cyborg 17.0.0 cyborg.conf.

cyborg-conductor, -api and -agent run as processes over RabbitMQ, MariaDB
and a real Placement (the deployment of ``test_arq_processes``), each with
two config files: first the one an upstream deployment has, setting every
upstream option (``cyborg.tests.fixtures.upstream_conf``), then a short one
with what only this test knows (the broker, the database, Placement's and
the Nova stand-in's addresses, the ports, the host names). The second sets
none of the renamed options, so their values come from the upstream file.
Then:

* every service starts, heartbeats and serves: the API answers, the agent
  reports, an ARQ binds and resolves and Nova is told;
* the agent reports every second: upstream's [DEFAULT] periodic_interval
  (1) is its [agent] report_interval (60 by default);
* each service logs one warning listing the options it does not know,
  exactly the upstream options without an equivalent here, and one
  deprecation warning per renamed option it reads, naming both names;
* SIGTERM stops them cleanly.
"""

import re
import uuid

from cyborg.tests import base
from cyborg.tests.fixtures import placement
from cyborg.tests.fixtures import processes
from cyborg.tests.fixtures import upstream_conf
from cyborg.tests.functional.services import deployment
from cyborg.tests.functional.services import test_arq_processes as cases

UNKNOWN_WARNING = re.compile(
    r'does not know \(options of OpenStack Cyborg without an equivalent '
    r'here, or misspelt\): (.*)\. The operator guide')


def deprecation(old_group, old_name, new_group, new_name):
    """oslo.config's warning of a value read under a deprecated name."""
    return ('Option "%s" from group "%s" is deprecated. Use option "%s" '
            'from group "%s".' % (old_name, old_group, new_name, new_group))


class UpstreamConfProcessesTest(cases.ArqProcessesMixin, base.TestCase):

    backend = 'mysql'

    def setUp(self):
        super().setUp()
        self.nova = self.useFixture(cases.NovaStandIn())
        self.upstream_path = upstream_conf.write(self.state_path)

    def _process(self, script, options):
        """``script`` with the upstream file, then ``options``' file."""
        command = [processes.console_script(script), '--config-file',
                   self.upstream_path]
        service = self.useFixture(processes.ServiceProcess(
            script, options, command=command))
        self.services.append(service)
        return service

    def _start_services(self, fleet, conductor_options=None):
        deployment.write_fleet(self.fleet_path, fleet)
        common = {
            'transport_url': self.rabbit.transport_url,
            'control_exchange': self.rabbit.control_exchange,
            'report_interval': 1,
            'graceful_shutdown_timeout': 20,
            'rpc_response_timeout': 10,
            'debug': True,
        }
        self.conductor = self._process('cyborg-conductor', {
            'DEFAULT': dict(common, host='conductor-%s' % self.suffix),
            'database': {'connection': self.database.url},
            'placement': {'auth_type': 'admin_token',
                          'endpoint': self.placement.endpoint,
                          'endpoint_override': self.placement.endpoint,
                          'token': placement.TOKEN},
            'nova': {'auth_type': 'admin_token',
                     'endpoint': self.nova.endpoint, 'token': 'nova-token'},
            'conductor': {'bind_sweep_interval': 1},
        })
        self.api = self._process('cyborg-api', {
            'DEFAULT': dict(common, host='api-%s' % self.suffix,
                            auth_strategy='noauth'),
            'api': {'host_ip': '127.0.0.1', 'port': self.api_port},
            'database': {'connection': self.database.url},
        })
        self._wait_until(lambda: self._heartbeat_of(
            'conductor-%s' % self.suffix, 'cyborg-conductor'),
            'the conductor heartbeat')
        self.agent = self._process('cyborg-agent', {
            'DEFAULT': dict(common, host=self.host),
            'agent': {'fake_inventory': self.fleet_path},
        })
        return self._wait_until(self._inventory_reported,
                                'the fleet in the API with providers')

    def _unknown_warnings(self, service):
        return UNKNOWN_WARNING.findall(service.log())

    def test_upstream_configuration_starts_and_serves(self):
        deployables = self._start_services(
            {'fpgas': [cases.FPGA_A, cases.FPGA_B], 'gpus': [cases.T4_GPU]})

        # [DEFAULT] periodic_interval = 1 paces the agent's reports.
        self._wait_for_reports(3, 'reports a second apart')

        # An ARQ binds, resolves, and Nova hears of it.
        rp_uuid = deployables[cases.REGION_A]['rp_uuid']
        profile = self._create_profile('upstream-conf-%s' % self.suffix,
                                       cases.region_trait(cases.REGION_A_ID))
        arq = self._create_arq(profile['name'])
        instance_uuid = str(uuid.uuid4())
        self._bind(arq['uuid'], rp_uuid, instance_uuid)
        resolved = self._resolved(instance_uuid)
        self.assertEqual([(arq['uuid'], 'Bound')],
                         [(item['uuid'], item['state']) for item in resolved])
        self._wait_until(lambda: self.nova.events(),
                         'the event of the bind at Nova')

        # One warning per service, listing exactly the unknown options.
        for service in self.services:
            warnings = self._unknown_warnings(service)
            self.assertEqual(1, len(warnings), service.script)
            self.assertEqual(upstream_conf.unknown_names(),
                             warnings[0].split(', '), service.script)

        # One deprecation warning per renamed option read.
        expected = {
            self.conductor: [('DEFAULT', 'bind_timeout', 'conductor',
                              'bind_timeout'),
                             ('DEFAULT', 'thread_pool_size', 'conductor',
                              'bind_workers')],
            self.agent: [('DEFAULT', 'periodic_interval', 'agent',
                          'report_interval')],
        }
        for service, renames in expected.items():
            log = service.log()
            for rename in renames:
                self.assertEqual(1, log.count(deprecation(*rename)),
                                 '%s: %s' % (service.script, rename))

        self._assert_clean_stop(list(self.services))
