"""POST /v2/bitstreams/{image_id}/prefetch through the real WSGI application.

A conductor and two agents (the fake driver: an Intel card on one host, a
Xilinx card on the other) are reached by local RPC dispatch in this
process, Glance is a real one (``cyborg.tests.fixtures.glance``). A
prefetch reaches the cache of the host the bitstream fits, not the other.
"""

import os
import time
import uuid

import fixtures
import webob

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import rpc
from cyborg.agent import manager as agent_manager
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.agent.drivers import fake
from cyborg.clients import glance as glance_client
from cyborg.conductor import inventory_report
from cyborg.policies import bitstream as bitstream_policies
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.unit.api import real_app

INTEL_HOST = 'compute-intel'
XILINX_HOST = 'compute-xilinx'
FLEETS = {
    INTEL_HOST: """
fpgas:
  - vendor: "0x8086"
    vendor_name: intel
    board: pac_arria10
    regions:
      - program: {result: success}
""",
    XILINX_HOST: """
fpgas:
  - vendor: "0x10ee"
    vendor_name: xilinx
    board: u250
    regions:
      - program: {result: success}
""",
}
PATH = '/v2/bitstreams/%s/prefetch'


def as_role(role, project='project-a'):
    """noauth headers of a caller with only ``role`` in ``project``."""
    return {'X-Roles': role, 'X-Project-Id': project,
            'X-Service-Identity-Status': 'Invalid'}


class PrefetchAPIBase(real_app.RealAppTestCase):
    """The application, a conductor, the agents of FLEETS and Glance."""

    conductor_server = 'prefetch-api-test'

    def setUp(self):
        super().setUp()
        self.context = cyborg_context.get_admin_context()
        self.useFixture(glance_fixture.GlanceFixture())
        self.glance = glance_client.GlanceClient(conf.CONF)
        self.directory = self.useFixture(fixtures.TempDir()).path
        self.agents = {host: self._start_agent(host) for host in FLEETS}

    def _start_agent(self, host):
        path = os.path.join(self.directory, '%s.yaml' % host)
        with open(path, 'w') as stream:
            stream.write(FLEETS[host])
        agent = agent_manager.AgentManager(host=host, driver_names=[])
        agent.drivers = {'fake_driver': fake.FakeDriver(path, host=host)}
        rpc.register_local_endpoint(agent_rpcapi.TOPIC, host, agent)
        self.addCleanup(rpc.unregister_local_endpoint, agent_rpcapi.TOPIC,
                        host)
        # One state directory per host, as on two compute nodes.
        state = os.path.join(self.directory, host)
        agent._bitstream_cache = agent_manager.bitstream_cache \
            .BitstreamCache(os.path.join(state, 'cache'), 2 ** 20)
        inventory_report.apply(self.context, host, agent.collect_inventory())
        return agent

    def _image(self, vendor='0x8086', board='pac_arria10', tags=('FPGA',)):
        properties = {
            'bs-name': 'aes', 'bs-uuid': str(uuid.uuid4()),
            'vendor': vendor, 'board': board, 'version': '1',
            'driver_ver': '1', 'driver_path': '/opt',
            'function_uuid': str(uuid.uuid4())}
        path = os.path.join(self.directory, 'bitstream.gbs')
        with open(path, 'wb') as data:
            data.write(b'\x02bitstream' * 100)
        return self.glance.upload(path, 'aes', properties, tags)['id']

    def post(self, image_id, status, version='2.6', **headers):
        headers['OpenStack-API-Version'] = 'accelerator ' + version
        response = webob.Request.blank(
            PATH % image_id, method='POST',
            headers=headers).get_response(self.application)
        self.assertEqual(status, response.status_int, response.text)
        return response

    def cached(self, host):
        return [name.split('.')[0]
                for name in self.agents[host].bitstream_cache.names()]

    def wait_cached(self, host, image_id, timeout=10):
        deadline = time.monotonic() + timeout
        while image_id not in self.cached(host):
            self.assertLess(time.monotonic(), deadline,
                            'image %s never reached the cache of %s'
                            % (image_id, host))
            time.sleep(0.05)


class PrefetchAPITest(PrefetchAPIBase):

    def test_the_fitting_host_caches_the_image(self):
        image_id = self._image()

        response = self.post(image_id, 202)

        self.assertEqual({'image_id': image_id, 'hosts': [INTEL_HOST]},
                         response.json_body)
        self.wait_cached(INTEL_HOST, image_id)
        self.assertEqual([], self.cached(XILINX_HOST))

    def test_a_bitstream_fitting_nothing_is_sent_nowhere(self):
        image_id = self._image(board='other_board')

        response = self.post(image_id, 202)

        self.assertEqual([], response.json_body['hosts'])

    def test_the_other_vendor_goes_to_the_other_host(self):
        image_id = self._image(vendor='xilinx', board='u250')

        response = self.post(image_id, 202)

        self.assertEqual([XILINX_HOST], response.json_body['hosts'])
        self.wait_cached(XILINX_HOST, image_id)
        self.assertEqual([], self.cached(INTEL_HOST))

    def test_below_2_6_the_path_is_unknown(self):
        self.post(self._image(), 404, version='2.5')

    def test_a_bad_image_id_is_400(self):
        response = self.post('not-an-image', 400)
        self.assertIn('Glance image id', response.text)

    def test_an_unknown_image_is_404(self):
        image_id = str(uuid.uuid4())
        response = self.post(image_id, 404)
        self.assertIn(image_id, response.text)

    def test_an_image_that_is_no_bitstream_is_400(self):
        response = self.post(self._image(tags=()), 400)
        self.assertIn('FPGA', response.text)

    def test_only_an_admin_may_prefetch(self):
        image_id = self._image()
        for role in ('member', 'reader', 'manager', 'service'):
            response = self.post(image_id, 403, **as_role(role))
            self.assertIn(bitstream_policies.PREFETCH, response.text)
        self.post(image_id, 202, **as_role('admin'))

    def test_other_methods_are_405(self):
        image_id = self._image()
        for method in ('GET', 'PUT', 'PATCH', 'DELETE'):
            response = webob.Request.blank(
                PATH % image_id, method=method,
                headers={'OpenStack-API-Version': 'accelerator 2.6'}
            ).get_response(self.application)
            self.assertEqual(405, response.status_int, method)
            self.assertEqual('POST', response.headers['Allow'])

    def test_the_fit_is_read_in_one_statement(self):
        image_id = self._image()
        del self.statements[:]

        self.post(image_id, 202)

        self.assertEqual(1, len(self.statements), self.statements)


class PrefetchOnMariaDBTest(PrefetchAPIBase):
    """The fit's one statement on the database servers."""

    backend = 'mysql'

    def test_the_fitting_host_is_found_in_one_statement(self):
        image_id = self._image(vendor='xilinx', board='u250')
        del self.statements[:]

        response = self.post(image_id, 202)

        self.assertEqual([XILINX_HOST], response.json_body['hosts'])
        self.assertEqual(1, len(self.statements), self.statements)


class PrefetchOnPostgreSQLTest(PrefetchOnMariaDBTest):

    backend = 'postgresql'
