"""Verified programming and shells, end to end: cyborg-api, -conductor and
-agent as separate processes over RabbitMQ, MariaDB, a real Placement and
a real Glance (in the test process, as in ``test_os_acc_programming``).

The fake driver simulates three Intel cards. Card A's region is a stand-in
whose loads leave nothing new (``program: {loads: nothing}``): the tool
says it loaded the image, the readback shows the old function. Cards B and
C take what they are given, B with shell S1 loaded and C with shell S2.

* A program call on A fails (502) naming what the region reports, the
  region turns ``degraded`` (API 2.6) and leaves Placement's offer
  (reserved = total) while its bitstream_id and function trait stay as
  they were, and the history says why. A bind (an os-acc plug, Nova's
  path) on A fails the same way.
* A partial bitstream needing shell S1 programs (API) and binds (plug) on
  B, and is refused on C: 409 from the API, a failed bind naming the shell.
"""

import json
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
REGION_ID = '7c1d2e3f40514a6b8c9d0e1f2a3b4c5d'
OLD_FUNCTION = '0a0b0c0d0e0f40108090a0b0c0d0e0f0'
SHELL_1 = '1e2d3c4b5a6948778695a4b3c2d1e0f1'
SHELL_2 = '2f3e4d5c6b7a48998877665544332210'


def card(shell_id, **region):
    region.update(id=REGION_ID, pfs=1, vfs_per_pf=2)
    return {'vendor': '0x8086', 'vendor_name': 'intel',
            'board': 'pac_arria10', 'model': 'PAC Arria 10 GX',
            'product_id': '0x09c4', 'attach_type': 'PCI',
            'shell_id': shell_id, 'regions': [region]}


FLEET = {'fpgas': [
    card(SHELL_1, function_id=OLD_FUNCTION, program={'loads': 'nothing'}),
    card(SHELL_1),
    card(SHELL_2),
]}
REGIONS = ['fpga-0000:%02x:00.0-region0' % bus for bus in (0x10, 0x11, 0x12)]
FLEET_VERSION = {'OpenStack-API-Version': 'accelerator 2.6'}
FUNCTION_TRAIT = 'CUSTOM_FPGA_FUNCTION_ID_'


class VerifiedProgrammingTest(os_acc_scenario.OsAccProcessesMixin,
                              base.TestCase):

    backend = 'mysql'

    def setUp(self):
        super().setUp()
        self.glance = self.useFixture(glance_fixture.GlanceFixture())
        glance_options = {'glance': {'auth_type': 'none',
                                     'endpoint_override': self.glance.endpoint}}
        conductor = dict(glance_options)
        conductor['conductor'] = {'program_timeout': 20,
                                  'bind_sweep_interval': 1,
                                  'bind_timeout': 30}
        # Reports come every second: a degraded region must not recover
        # (after this many healthy reports) before the test looks at it.
        conductor['health'] = {'recovery_reports': 10000}
        deployment.DeploymentMixin._start_services(
            self, FLEET, conductor_options=conductor,
            agent_options=glance_options)
        self.regions = self._wait_until(self._regions,
                                        'the three regions with providers')
        self.images = glance_client.GlanceClient(conf.CONF)

    def _regions(self):
        """The regions (A, B, C) through the API once all have a provider
        with the card's traits."""
        if not self._reports_done():
            return None
        status, body = self._api('GET', '/v2/deployables')
        if status != 200:
            return None
        found = {item['name']: item for item in body['deployables']}
        regions = [found.get(name) for name in REGIONS]
        if any(region is None or region['rp_uuid'] is None
               for region in regions):
            return None
        for region in regions:
            response = self.placement.adapter.get(
                '/resource_providers/%s/traits' % region['rp_uuid'])
            if response.status_code != 200 or \
                    'CUSTOM_FPGA_INTEL' not in response.json()['traits']:
                return None
        return regions

    def _upload(self, shell_id=None):
        """A bitstream for the regions (partial when it names a shell); its
        image id and function uuid."""
        function = str(uuid.uuid4())
        properties = {
            'bs-name': 'aes', 'bs-uuid': str(uuid.uuid4()),
            'vendor': '0x8086', 'board': 'pac_arria10', 'version': '1',
            'driver_ver': '1.0', 'driver_path': '/opt/intel/opae',
            'region_uuid': REGION_ID, 'function_uuid': function,
            'function_name': 'aes'}
        if shell_id is not None:
            properties['shell_id'] = shell_id
        path = os.path.join(self.state_path, '%s.gbs' % uuid.uuid4().hex)
        with open(path, 'wb') as data:
            data.write(os.urandom(4096))
        return self.images.upload(path, 'aes', properties, ['FPGA'])['id'], \
            function

    def _program(self, region, image_id):
        return self._api(
            'PATCH', '/v2/deployables/%s/program' % region['uuid'],
            [{'path': '/program', 'op': 'replace',
              'value': [{'image_uuid': image_id}]}])

    def _shown(self, region):
        """The deployable as the API shows it at 2.6."""
        status, body = deployment.api_request(
            self.api_port, 'GET', '/v2/deployables/%s' % region['uuid'],
            headers=FLEET_VERSION, timeout=60)
        self.assertEqual(200, status, body)
        return body

    def _function_traits(self, region):
        response = self.placement.adapter.get(
            '/resource_providers/%s/traits' % region['rp_uuid'])
        self.assertEqual(200, response.status_code, response.text)
        return {trait for trait in response.json()['traits']
                if trait.startswith(FUNCTION_TRAIT)}

    def _offered(self, region):
        """(total, reserved) of the region's FPGA inventory."""
        response = self.placement.adapter.get(
            '/resource_providers/%s/inventories' % region['rp_uuid'])
        self.assertEqual(200, response.status_code, response.text)
        inventory = response.json()['inventories']['FPGA']
        return inventory['total'], inventory['reserved']

    def _out_of_the_offer(self, region):
        total, reserved = self._offered(region)
        return reserved == total

    def _history(self, region):
        status, body = deployment.api_request(
            self.api_port, 'GET',
            '/v2/deployables/%s/history' % region['uuid'],
            headers=FLEET_VERSION, timeout=60)
        self.assertEqual(200, status, body)
        return body

    def test_a_program_that_leaves_something_else_degrades_the_region(self):
        region = self.regions[0]
        old_traits = {FUNCTION_TRAIT + OLD_FUNCTION.upper()}
        self.assertEqual(old_traits, self._function_traits(region))
        self.assertEqual((2, 0), self._offered(region))
        image_id, function = self._upload()

        status, answer = self._program(region, image_id)

        self.assertEqual(502, status, '%s\n%s' % (answer, self._logs()))
        reason = ('verification failed: the region reports function %s, '
                  'not image %s (function %s)'
                  % (OLD_FUNCTION, image_id, function))
        self.assertIn(reason, json.dumps(answer))
        shown = self._shown(region)
        self.assertEqual((None, 'degraded'),
                         (shown['bitstream_id'], shown['health']))
        self.assertIn(reason, shown['health_reason'])
        # Placement stops offering it; what it holds is as reported.
        self._wait_until(lambda: self._out_of_the_offer(region),
                         'the degraded region out of the offer')
        self._wait_for_reports(2, 'the reports after the failed load')
        self.assertEqual(old_traits, self._function_traits(region))
        self.assertTrue(self._out_of_the_offer(region))
        self.assertEqual('degraded', self._shown(region)['health'])
        programs = [entry for entry in self._history(region)['history']
                    if entry['event'] == 'program']
        self.assertEqual(['failed'], [entry['outcome'] for entry in programs])
        # The entry's reason is cut to its column: what was found stays.
        self.assertIn('verification failed: the region reports function %s'
                      % OLD_FUNCTION, programs[0]['reason'])
        # The other regions are as they were.
        for other in self.regions[1:]:
            self.assertEqual((2, 0), self._offered(other))
            self.assertEqual('healthy', self._shown(other)['health'])

    def test_a_bind_that_leaves_something_else_fails_and_degrades(self):
        self._configure_compute_node()
        self.assertIsNone(os_acc.initialize(timeout=WAIT_TIMEOUT))
        region = self.regions[0]
        image_id, function = self._upload()
        instance = os_acc_scenario.new_instance('verified')

        error = self.assertRaises(
            os_acc.PlugFailed, os_acc.plug, instance,
            {'uuid': region['rp_uuid']},
            {'resources:FPGA': '1', 'accel:bitstream_id': image_id})

        self.assertEqual(1, len(error.reasons), error.reasons)
        self.assertIn('verification failed: the region reports function %s, '
                      'not image %s' % (OLD_FUNCTION, image_id),
                      error.reasons[0])
        self.assertEqual('degraded', self._shown(region)['health'])
        self.assertIsNone(self._shown(region)['bitstream_id'])
        self._wait_until(lambda: self._out_of_the_offer(region),
                         'the degraded region out of the offer')
        self.assertEqual({}, self._in_use(region['rp_uuid']))
        self.assertEqual({}, self._allocations(region['rp_uuid']))

    def test_a_partial_bitstream_fits_where_its_shell_is_loaded(self):
        _, on_shell_1, on_shell_2 = self.regions
        # The cards report the shells they have loaded.
        status, body = self._api('GET', '/v2/devices')
        self.assertEqual(200, status, body)
        infos = [device['vendor_board_info'] for device in body['devices']]
        self.assertEqual(sorted([SHELL_1, SHELL_1, SHELL_2]), sorted(
            (json.loads(info) if isinstance(info, str) else info)['shell_id']
            for info in infos))
        image_id, _ = self._upload(shell_id=SHELL_1)

        status, answer = self._program(on_shell_1, image_id)
        self.assertEqual(200, status, '%s\n%s' % (answer, self._logs()))
        self.assertEqual(image_id, answer['bitstream_id'])

        status, answer = self._program(on_shell_2, image_id)
        self.assertEqual(409, status, answer)
        self.assertIn("It is a partial bitstream needing shell %s, but shell "
                      "'%s' is loaded" % (uuid.UUID(SHELL_1), SHELL_2),
                      answer['error_message'])
        self.assertIsNone(self._shown(on_shell_2)['bitstream_id'])

        # The same through a bind: it fits B, which holds it already, and
        # not C, which is left alone.
        self._configure_compute_node()
        self.assertIsNone(os_acc.initialize(timeout=WAIT_TIMEOUT))
        first = os_acc_scenario.new_instance('shell-1')
        plugged = os_acc.plug(first, {'uuid': on_shell_1['rp_uuid']},
                              {'resources:FPGA': '1',
                               'accel:bitstream_id': image_id})
        self.assertEqual(1, len(plugged), plugged)
        second = os_acc_scenario.new_instance('shell-2')
        error = self.assertRaises(
            os_acc.PlugFailed, os_acc.plug, second,
            {'uuid': on_shell_2['rp_uuid']},
            {'resources:FPGA': '1', 'accel:bitstream_id': image_id})
        self.assertIn("needing shell %s, but shell '%s' is loaded"
                      % (uuid.UUID(SHELL_1), SHELL_2), error.reasons[0])
        self.assertIsNone(self._shown(on_shell_2)['bitstream_id'])
        self.assertEqual({}, self._in_use(on_shell_2['rp_uuid']))
