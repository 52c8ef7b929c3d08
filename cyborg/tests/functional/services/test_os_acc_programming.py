"""os-acc plugs that program a bitstream, end to end, with a real Glance.

cyborg-conductor, -api and -agent run as separate processes over RabbitMQ,
MariaDB and a real Placement (``deployment``); Glance runs in the test
process (``cyborg.tests.fixtures.glance``), reached over HTTP without
Keystone by the conductor (which resolves the flavor's ``accel:
bitstream_id`` or ``accel:function_id`` with its own [glance] options) and
by the agent (which downloads the image for its fake driver). The test
process is the compute driver, as in ``test_os_acc_processes``: it uploads
bitstreams and calls ``os_acc.plug`` and ``unplug``. A programmed region
shows in the API (``bitstream_id``) and, from the agent's next report, in
its function trait in Placement; the handle the plug returned is the one
the database marks in use, and stays so across that report.
"""

import os
import uuid

from cyborg import conf
from cyborg.clients import glance as glance_client
from cyborg.tests import base
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.functional.services import deployment
from cyborg.tests.functional.services import test_os_acc_processes as os_acc_scenario
import os_acc

WAIT_TIMEOUT = deployment.WAIT_TIMEOUT
scenario = os_acc_scenario.scenario

REGION_A_ID = '5b0c3e1f7a2d4c6e8f9a0b1c2d3e4f50'
REGION_B_ID = 'c4d5e6f708194a2bb3c4d5e6f7081920'
OLD_FUNCTION = '0f1e2d3c4b5a49788796a5b4c3d2e1f0'
# Two Intel PACs, each with one region: A's PF has two VFs (two PCI attach
# handles), B's one.
FLEET = {'fpgas': [
    {'vendor': '0x8086', 'vendor_name': 'intel', 'board': 'pac_arria10',
     'model': 'PAC Arria 10 GX', 'product_id': '0x09c4',
     'attach_type': 'PCI',
     'regions': [{'id': REGION_A_ID, 'function_id': OLD_FUNCTION, 'pfs': 1,
                  'vfs_per_pf': 2,
                  'program': {'seconds': 0.2, 'result': 'success'}}]},
    {'vendor': '0x8086', 'vendor_name': 'intel', 'board': 'pac_arria10',
     'model': 'PAC Arria 10 GX', 'product_id': '0x09c4',
     'attach_type': 'PCI',
     'regions': [{'id': REGION_B_ID, 'pfs': 1, 'vfs_per_pf': 1}]},
]}
REGION_A = 'fpga-0000:10:00.0-region0'
REGION_B = 'fpga-0000:11:00.0-region0'
FUNCTION_TRAIT = 'CUSTOM_FPGA_FUNCTION_ID_'


def function_trait(function_uuid):
    return FUNCTION_TRAIT + function_uuid.replace('-', '').upper()


class OsAccProgrammingTest(os_acc_scenario.OsAccProcessesMixin,
                           base.TestCase):

    backend = 'mysql'

    def setUp(self):
        super().setUp()
        self.glance = self.useFixture(glance_fixture.GlanceFixture())
        glance_options = {'glance': {'auth_type': 'none',
                                     'endpoint_override': self.glance.endpoint}}
        conductor = dict(glance_options)
        conductor['conductor'] = {'bind_sweep_interval': 1,
                                  'bind_timeout': 30}
        deployment.DeploymentMixin._start_services(
            self, FLEET, conductor_options=conductor,
            agent_options=glance_options)
        self.deployables = self._wait_until(
            self._regions, 'both regions in the API with providers')
        self.images = glance_client.GlanceClient(conf.CONF)
        self._configure_compute_node()
        self.assertIsNone(os_acc.initialize(timeout=WAIT_TIMEOUT))

    def _regions(self):
        """{name: deployable} once both regions have a provider."""
        if not self._reports_done():
            return None
        status, body = self._api('GET', '/v2/deployables')
        if status != 200:
            return None
        found = {item['name']: item for item in body['deployables']}
        if any(found.get(name, {}).get('rp_uuid') is None
               for name in (REGION_A, REGION_B)):
            return None
        return found

    def _upload(self, region_id, function_uuid, name='aes-256'):
        """A bitstream with its metadata for ``region_id`` in Glance; its image id."""
        properties = {
            'bs-name': name, 'bs-uuid': str(uuid.uuid4()),
            'vendor': '0x8086', 'board': 'pac_arria10', 'version': '2.1',
            'driver_ver': '1.0', 'driver_path': '/opt/intel/opae',
            'region_uuid': region_id, 'function_uuid': function_uuid,
            'function_name': name}
        path = os.path.join(self.state_path, '%s.gbs' % uuid.uuid4().hex)
        with open(path, 'wb') as data:
            data.write(os.urandom(4096))
        return self.images.upload(path, name, properties, ['FPGA'])['id']

    def _bitstream_id(self, name):
        status, answer = self._api(
            'GET', '/v2/deployables/%s' % self.deployables[name]['uuid'])
        self.assertEqual(200, status, answer)
        return answer['bitstream_id']

    def _traits(self, rp_uuid):
        response = self.placement.adapter.get(
            '/resource_providers/%s/traits' % rp_uuid)
        self.assertEqual(200, response.status_code, response.text)
        return set(response.json()['traits'])

    def _function_traits(self, rp_uuid):
        return {trait for trait in self._traits(rp_uuid)
                if trait.startswith(FUNCTION_TRAIT)}

    def _assert_plugged(self, instance, rp_uuid, plugged):
        """``plugged`` is the one handle of ``rp_uuid`` in use, held by the
        instance's one Bound ARQ."""
        in_use = self._in_use(rp_uuid)
        self.assertEqual(list(in_use.values()),
                         [entry['pci_id'] for entry in plugged],
                         '%s\n%s' % (plugged, self._logs()))
        arqs = self._arqs_of(instance)
        self.assertEqual(1, len(arqs), arqs)
        self._assert_bound(arqs[0], rp_uuid, instance['uuid'])
        self.assertEqual(list(in_use), [arqs[0]['attach_handle_uuid']])

    def test_plug_programs_the_named_bitstream_and_unplug_frees_it(self):
        region_a = self.deployables[REGION_A]['rp_uuid']
        region_b = self.deployables[REGION_B]['rp_uuid']
        function_a = str(uuid.uuid4())
        function_b = str(uuid.uuid4())
        image_a = self._upload(REGION_A_ID, function_a)
        # Two images provide function B; only one is for region B's type.
        image_b = self._upload(REGION_B_ID, function_b, name='gzip')
        self._upload(REGION_A_ID, function_b, name='gzip')
        self.assertEqual({function_trait(OLD_FUNCTION)},
                         self._function_traits(region_a))

        # 1. accel:bitstream_id: region A is programmed with the image, then
        # one of its handles is attached and returned.
        first = os_acc_scenario.new_instance('first')
        plugged = os_acc.plug(first, {'uuid': region_a},
                              {'resources:FPGA': '1',
                               'accel:bitstream_id': image_a})
        self.assertEqual(1, len(plugged), plugged)
        self.assertEqual(['pci_id'], list(plugged[0]))
        self._assert_plugged(first, region_a, plugged)
        self.assertEqual(image_a, self._bitstream_id(REGION_A))
        # The agent's next report shows the loaded function in Placement,
        # and the handle stays in use.
        self._wait_until(lambda: self._function_traits(region_a) ==
                         {function_trait(function_a)},
                         'the function of image %s in Placement' % image_a)
        self._assert_plugged(first, region_a, plugged)
        self.assertIn('Downloaded image %s' % image_a, self.agent.log())

        # 2. A bitstream Glance does not have: PlugFailed naming it, nothing
        # held for the instance, region B untouched, no allocation.
        missing = str(uuid.uuid4())
        failing = os_acc_scenario.new_instance('failing')
        error = self.assertRaises(os_acc.PlugFailed, os_acc.plug, failing,
                                  {'uuid': region_b},
                                  {'resources:FPGA': '1',
                                   'accel:bitstream_id': missing})
        self.assertEqual(failing['uuid'], error.instance_uuid)
        self.assertEqual(1, len(error.reasons), error.reasons)
        self.assertIn('image %s, which Glance does not have' % missing,
                      error.reasons[0])
        self.assertEqual([], self._arqs_of(failing))
        self.assertEqual({}, self._in_use(region_b))
        self.assertIsNone(self._bitstream_id(REGION_B))
        self.assertEqual({}, self._allocations(region_b))
        self.assertEqual(1, self._arq_count())

        # 3. accel:function_id with the region type's trait: Glance's
        # metadata resolve it to the one image for region B.
        second = os_acc_scenario.new_instance('second')
        other = os_acc.plug(
            second, {'uuid': region_b},
            {'resources:FPGA': '1', 'accel:function_id': function_b,
             'trait:%s' % scenario.region_trait(REGION_B_ID): 'required'})
        self._assert_plugged(second, region_b, other)
        self.assertEqual(image_b, self._bitstream_id(REGION_B))
        self._wait_until(lambda: self._function_traits(region_b) ==
                         {function_trait(function_b)},
                         'the function of image %s in Placement' % image_b)
        # Region A kept its image.
        self.assertEqual(image_a, self._bitstream_id(REGION_A))

        # 4. Plugging again answers the same handle, programming nothing.
        self.assertEqual(plugged, os_acc.plug(
            first, {'uuid': region_a},
            {'resources:FPGA': '1', 'accel:bitstream_id': image_a}))
        self.assertEqual(2, self._arq_count())

        # 5. Unplug frees everything; the regions keep their bitstreams.
        self.assertEqual([1, 1, 0], [os_acc.unplug(instance) for instance
                                     in (first, second, failing)])
        self.assertEqual(0, self._arq_count())
        for rp_uuid in (region_a, region_b):
            self._assert_handles_free(rp_uuid)
            self.assertEqual({}, self._allocations(rp_uuid))
        self.assertEqual((image_a, image_b),
                         (self._bitstream_id(REGION_A),
                          self._bitstream_id(REGION_B)))
        for service in (self.conductor, self.agent):
            self.assertNotIn('Traceback', service.log(), service.script)
        # The agent was never asked about the missing image.
        self.assertNotIn(missing, self.agent.log())
