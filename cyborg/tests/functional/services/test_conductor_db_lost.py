"""A conductor that lost its database stops taking work (issue 33, point 3).

Two cyborg-conductor processes share one MariaDB database, one RabbitMQ
virtual host, an API and an agent; the second reaches the database
through a TCP proxy (``cyborg.tests.fixtures.balancer.Proxy``). The test
cuts the proxy: that conductor stops consuming its topic (its own
requests to it find nobody), every bind sent meanwhile is answered 202
and ends Bound through the other one, and once the proxy is back the
second conductor consumes again by itself, without a restart. Its log
says so once each way, without a traceback.
"""

import uuid

import oslo_messaging

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import rpc
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.tests import base
from cyborg.tests.fixtures import balancer
from cyborg.tests.fixtures import messaging
from cyborg.tests.fixtures import processes
from cyborg.tests.functional.services import test_arq_processes as cases

HANDLES = 8
FLEET = {'fpgas': [dict(cases.FPGA_A, regions=[
    {'id': cases.REGION_A_ID, 'pfs': 1, 'vfs_per_pf': HANDLES}]),
    cases.FPGA_B], 'gpus': [cases.T4_GPU]}
BINDS = 4


class ConductorDatabaseLostTest(cases.ArqProcessesMixin, base.TestCase):

    backend = 'mysql'

    def _start_proxied_conductor(self, host):
        url = self.database.engine.url
        self.proxy = balancer.Proxy((url.host or '127.0.0.1', url.port or 3306))
        self.proxy.restore()
        self.addCleanup(self.proxy.cut)
        config = dict(self.conductor_config)
        config['DEFAULT'] = dict(config['DEFAULT'], host=host)
        config['database'] = dict(config['database'], connection=url.set(
            host='127.0.0.1', port=self.proxy.port).render_as_string(
            hide_password=False))
        conductor = self.useFixture(processes.ServiceProcess(
            'cyborg-conductor', config))
        self.services.append(conductor)
        self._wait_until(lambda: self._heartbeat_of(host, 'cyborg-conductor'),
                         'the heartbeat of conductor %s' % host)
        return conductor

    def _ping(self, host):
        """The host that answered a ping sent to ``host``, or None."""
        client = rpc.get_client(oslo_messaging.Target(
            topic=conductor_rpcapi.TOPIC, server=host, version='1.0'))
        try:
            return client.prepare(timeout=3).call(
                cyborg_context.get_admin_context(), 'ping')
        except oslo_messaging.MessagingException:
            return None

    def _bind_all(self, profile_name, rp_uuid):
        instances = {}
        for _ in range(BINDS):
            arq_uuid = self._create_arq(profile_name)['uuid']
            instances[arq_uuid] = str(uuid.uuid4())
            self._bind(arq_uuid, rp_uuid, instances[arq_uuid])
        for instance_uuid in instances.values():
            [resolved] = self._resolved(instance_uuid)
            self._assert_bound(resolved, rp_uuid, instance_uuid)

    def test_binds_go_to_the_conductor_whose_database_answers(self):
        deployables = self._start_services(
            FLEET, {'conductor': {'bind_sweep_interval': 1}})
        rp_uuid = deployables[cases.REGION_A]['rp_uuid']
        host = 'conductor2-%s' % self.suffix
        proxied = self._start_proxied_conductor(host)
        self.useFixture(messaging.Messaging(
            conf.CONF, self.rabbit.transport_url,
            self.rabbit.control_exchange))
        self.assertEqual(host, self._ping(host))
        profile = self._create_profile('lost-%s' % self.suffix,
                                       cases.region_trait(cases.REGION_A_ID))

        self.proxy.cut()
        self._wait_until(lambda: 'no RPC request is taken' in proxied.log(),
                         'conductor %s to stop consuming' % host)
        self.assertIsNone(self._ping(host))
        # Every bind is answered 202 and bound: by the other conductor.
        self._bind_all(profile['name'], rp_uuid)

        self.proxy.restore()
        self._wait_until(lambda: self._ping(host) == host,
                         'conductor %s to consume again' % host)
        log = proxied.log()
        self.assertEqual(1, log.count('Outage of the database'), log)
        self.assertEqual(1, log.count('End of the outage of the database'),
                         log)
        self.assertEqual(1, log.count('taking RPC requests again'), log)
        self.assertNotIn('Traceback', log)
        self.assertIn('Binds recorded', self.conductor.log())
        self._assert_clean_stop(self.services)
