"""Programming end to end: cyborg-api, -conductor and -agent as separate
processes over RabbitMQ, MariaDB, a real Placement and a real Glance.

Glance runs in the test process (``cyborg.tests.fixtures.glance``) and the
services reach it over HTTP without Keystone: the conductor looks the image
up with the caller's (no-auth) context, the agent downloads it with its own
[glance] options. The agent's fake driver simulates an Intel card whose
region0 programs and whose region1 fails to. A success shows in the API
answer (``bitstream_id``) and, from the agent's next report, in the region's
function trait in Placement and in the region's PF/VF tree built from the
bitstream's topology; every refusal leaves the deployable, its attach
handles and its Placement traits as they were.
"""

import json
import os
import uuid

import sqlalchemy as sa

from cyborg.clients import glance as glance_client
from cyborg import conf
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.functional.services import deployment

REGION0_ID = '4d7e0c1b9a8f4e2d8c3b1a0f9e8d7c6b'
REGION1_ID = '0a1b2c3d4e5f40718293a4b5c6d7e8f9'
OLD_FUNCTION = '11111111222233334444555555555555'
NEW_FUNCTION = 'f0e1d2c3-b4a5-4697-8877-665544332211'
FLEET = {'fpgas': [{
    'vendor': '0x8086', 'vendor_name': 'intel', 'board': 'pac_arria10',
    'model': 'PAC Arria 10 GX', 'product_id': '0x09c4',
    'regions': [
        {'id': REGION0_ID, 'function_id': OLD_FUNCTION, 'pfs': 1,
         'vfs_per_pf': 2, 'program': {'seconds': 0.2, 'result': 'success'}},
        {'id': REGION1_ID, 'pfs': 1, 'vfs_per_pf': 1,
         'program': {'result': 'failed'}},
    ],
}]}
REGION = 'fpga-0000:10:00.0-region%d'
# A bitstream's topology: 2 PFs of 3 VFs each.
TOPOLOGY = {'pf': [{'name': 'pf_%d' % pf,
                    'vf': [{'name': 'vf_%d_%d' % (pf, vf)} for vf in range(3)]}
                   for pf in range(2)]}
FUNCTION_TRAIT = 'CUSTOM_FPGA_FUNCTION_ID_'


class ProgramProcessesTest(deployment.DeploymentMixin, base.TestCase):

    backend = 'mysql'

    def setUp(self):
        super().setUp()
        self.glance = self.useFixture(glance_fixture.GlanceFixture())
        glance_options = {'glance': {'auth_type': 'none',
                                     'endpoint_override': self.glance.endpoint}}
        conductor = dict(glance_options)
        conductor['conductor'] = {'program_timeout': 20}
        self._start_services(FLEET, conductor_options=conductor,
                             agent_options=glance_options)
        self.images = glance_client.GlanceClient(conf.CONF)
        self.regions = self._wait_until(self._regions, 'the first report')
        self._wait_until(self._in_placement, 'the first report in Placement')

    # -- Reading the API, the database and Placement ------------------------

    def _regions(self):
        """The two regions through the API, once both are reported."""
        status, answer = self._api('GET', '/v2/deployables')
        if status != 200:
            return None
        by_name = {item['name']: item for item in answer['deployables']}
        regions = [by_name.get(REGION % index) for index in range(2)]
        return regions if None not in regions else None

    def _in_placement(self):
        """Whether both regions have their providers' traits."""
        for region in self.regions:
            response = self.placement.adapter.get(
                '/resource_providers/%s/traits' % region['rp_uuid'])
            if response.status_code != 200 or \
                    'CUSTOM_FPGA_INTEL' not in response.json()['traits']:
                return False
        return True

    def _deployable(self, deployable_uuid):
        status, answer = self._api('GET',
                                   '/v2/deployables/%s' % deployable_uuid)
        self.assertEqual(200, status, answer)
        return answer

    def _rows_under(self, region):
        """(deployable names, attach handle count) of the region's tree."""
        deployables = models.Deployable.__table__
        handles = models.AttachHandle.__table__
        with self.database.engine.connect() as connection:
            rows = connection.execute(sa.select(
                deployables.c.id, deployables.c.name,
                deployables.c.parent_id)).all()
            children = {}
            for row in rows:
                children.setdefault(row.parent_id, []).append(row)
            root = [row for row in rows if row.name == region['name']][0]
            tree, pending = [], [root.id]
            while pending:
                below = children.get(pending.pop(), [])
                tree.extend(row.name for row in below)
                pending.extend(row.id for row in below)
            count = connection.execute(
                sa.select(sa.func.count()).select_from(handles).where(
                    handles.c.deployable_id == root.id)).scalar_one()
        return sorted(tree), count

    def _traits(self, region):
        response = self.placement.adapter.get(
            '/resource_providers/%s/traits' % region['rp_uuid'])
        self.assertEqual(200, response.status_code, response.text)
        return set(response.json()['traits'])

    def _function_traits(self, region):
        return {trait for trait in self._traits(region)
                if trait.startswith(FUNCTION_TRAIT)}

    def _state(self, region):
        """What a refused request must leave alone."""
        return (self._deployable(region['uuid'])['bitstream_id'],
                self._rows_under(region), self._traits(region))

    # -- Glance ------------------------------------------------------------

    def _image(self, region_id=REGION0_ID, tags=('FPGA',), **changes):
        properties = {
            'bs-name': 'aes-256', 'bs-uuid': str(uuid.uuid4()),
            'vendor': '0x8086', 'board': 'pac_arria10', 'version': '2.1',
            'driver_ver': '1.0', 'driver_path': '/opt/intel/opae',
            'region_uuid': region_id, 'function_uuid': NEW_FUNCTION,
            'function_name': 'aes', 'topology': json.dumps(TOPOLOGY)}
        properties.update(changes)
        path = os.path.join(self.state_path, 'aes.gbs')
        with open(path, 'wb') as data:
            data.write(os.urandom(4096))
        return self.images.upload(path, 'aes-256', properties, tags)['id']

    def _program(self, region, image_id):
        return self._api(
            'PATCH', '/v2/deployables/%s/program' % region['uuid'],
            [{'path': '/program', 'op': 'replace',
              'value': [{'image_uuid': image_id}]}])

    # -- Tests -------------------------------------------------------------

    def test_program_records_the_image_and_the_report_follows(self):
        region, other = self.regions
        other_before = self._state(other)
        self.assertEqual({FUNCTION_TRAIT + OLD_FUNCTION.upper()},
                         self._function_traits(region))
        image_id = self._image()

        status, answer = self._program(region, image_id)

        self.assertEqual(200, status, '%s\n%s' % (answer, self._logs()))
        self.assertEqual((region['uuid'], image_id),
                         (answer['uuid'], answer['bitstream_id']))
        self.assertEqual(image_id,
                         self._deployable(region['uuid'])['bitstream_id'])
        # The agent reports at once: the new function replaces the old one
        # in Placement, and the topology becomes the region's tree.
        new_trait = FUNCTION_TRAIT + NEW_FUNCTION.replace('-', '').upper()
        self._wait_until(
            lambda: self._function_traits(region) == {new_trait},
            'the new function trait in Placement')
        expected_tree = sorted(
            ['%s-pf%d' % (region['name'], pf) for pf in range(2)] +
            ['%s-pf%d-vf%d' % (region['name'], pf, vf)
             for pf in range(2) for vf in range(3)])
        self._wait_until(lambda: self._rows_under(region) == (expected_tree, 6),
                         'the 2 PF x 3 VF tree with 6 handles')
        inventory = self.placement.adapter.get(
            '/resource_providers/%s/inventories' % region['rp_uuid']).json()
        self.assertEqual(6, inventory['inventories']['FPGA']['total'])
        self.assertEqual(other_before, self._state(other))

    def test_refusals_change_nothing(self):
        region, failing = self.regions
        before = self._state(region)
        failing_before = self._state(failing)
        cases = [
            (400, self._image(tags=()), 'FPGA'),
            (400, str(uuid.uuid4()), 'not visible'),
            (400, self._image(region_id='not-a-uuid'), 'region_uuid'),
            (409, self._image(vendor='0x10ee'), 'vendor'),
            (409, self._image(region_id=REGION1_ID), 'region'),
        ]
        for expected, image_id, words in cases:
            status, answer = self._program(region, image_id)
            self.assertEqual(expected, status, (image_id, answer))
            self.assertIn(words, json.dumps(answer), answer)

        # The agent's driver fails region1: 502 with the driver's message.
        status, answer = self._program(failing,
                                       self._image(region_id=REGION1_ID))
        self.assertEqual(502, status, answer)
        self.assertIn('simulated FAILED programming', json.dumps(answer))

        self.assertEqual(before, self._state(region))
        self.assertEqual(failing_before, self._state(failing))
        self.assertNotIn('Traceback', self.conductor.log())
        self.assertNotIn('Traceback', self.api.log())
