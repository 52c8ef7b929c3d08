"""Programming through the processes on a Galera cluster while the host
reports: two writer nodes.

cyborg-conductor and cyborg-api run on node 0, then one more of each on
node 1 (``binds.BindsMixin.add_writer``); the agent of the host reports
every second, and every report is applied in full
(``report_resync_interval = 0``): it writes the host's lock row and its
devices' and deployables' rows. The two conductors consume the one
conductor topic, so RabbitMQ deals the agent's reports and the API's
program calls to them in turn: the test programs region0 through the API
on node 1 with new images until the conductor on node 1 has served a
program call (at most ``PROGRAMS``), reports going on meanwhile through
both nodes; the agent reports at once after each programming
(``report_soon``), so that a report meets the record of the outcome.

Each program ends 200 with the image recorded as the region's
``bitstream_id``, read on all three nodes, and held by the fake card (its
state file); the reports that follow keep the record, and no report ever
had to correct it (a conductor logs "holds image" when it does): a
report applied from a stale read of the programming lock on the other
node would.
"""

import os
import uuid

import sqlalchemy as sa
from testtools import content

from cyborg import conf
from cyborg.agent.drivers import fake_state
from cyborg.clients import glance as glance_client
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.functional.galera import binds
from cyborg.tests.functional.services import deployment
from cyborg.tests.functional.services import test_program_processes as cases

DEPLOYABLE = models.Deployable.__table__
REGION = cases.REGION % 0
# Program calls at most, until the conductor on node 1 served one: they
# go to the two conductors in turn, with the reports between them.
PROGRAMS = 6
# What a report that had to correct a programming's record logs.
CORRECTED = ('holds image', 'no longer holds image')


class GaleraProgramReportsTest(binds.BindsMixin, base.TestCase):

    def setUp(self):
        super().setUp()
        self.glance = self.useFixture(glance_fixture.GlanceFixture())
        glance_options = {'glance': {'auth_type': 'none',
                                     'endpoint_override': self.glance.endpoint}}
        conductor = dict(glance_options, conductor={
            'program_timeout': 20, 'report_resync_interval': 0})
        self._start_services(cases.FLEET, conductor_options=conductor,
                             agent_options=glance_options)
        self.api_ports = [self.api_port]
        self.conductors = [self.conductor]
        self.region = self._wait_until(self._region, 'the first report',
                                       timeout=120)
        self.images = glance_client.GlanceClient(conf.CONF)
        self.add_writer(1)

    def _region(self):
        status, answer = self._api('GET', '/v2/deployables')
        if status != 200:
            return None
        found = [item for item in answer['deployables']
                 if item['name'] == REGION]
        return found[0] if found else None

    def _image(self):
        """A new bitstream for region0, of a new function."""
        path = os.path.join(self.state_path, 'bitstream.gbs')
        with open(path, 'wb') as data:
            data.write(os.urandom(4096))
        return self.images.upload(path, 'galera-bitstream', {
            'bs-name': 'galera', 'bs-uuid': str(uuid.uuid4()),
            'vendor': '0x8086', 'board': 'pac_arria10', 'version': '1',
            'driver_ver': '1.0', 'driver_path': '/opt/intel/opae',
            'region_uuid': cases.REGION0_ID,
            'function_uuid': str(uuid.uuid4()), 'function_name': 'f'},
            ('FPGA',))['id']

    def _recorded(self, index):
        """region0's bitstream_id on node ``index``, once the node applied
        what the cluster committed before."""
        engine = sa.create_engine(self.on_node(self.database.url, index),
                                  poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as connection:
                connection.execute(sa.text('SET SESSION wsrep_sync_wait = 1'))
                return connection.execute(
                    sa.select(DEPLOYABLE.c.bitstream_id).where(
                        DEPLOYABLE.c.uuid == self.region['uuid'])
                ).scalar_one()
        finally:
            engine.dispose()

    def _held(self):
        """The image the fake card's region0 holds (its state file)."""
        held = fake_state.read(fake_state.state_file(self.state_path,
                                                     self.host))
        return {region: loaded.bitstream_id
                for (_, region), loaded in held.items()}.get(REGION)

    def test_programs_through_node_1_while_the_host_reports(self):
        served = []
        reports = self._reports_done()
        before = self.conflicts()
        for attempt in range(1, PROGRAMS + 1):
            image_id = self._image()
            status, answer = deployment.api_request(
                self.api_ports[1], 'PATCH',
                '/v2/deployables/%s/program' % self.region['uuid'],
                [{'path': '/program', 'op': 'replace',
                  'value': [{'image_uuid': image_id}]}], timeout=60)

            self.assertEqual(200, status, '%s\n%s' % (answer, self._logs()))
            self.assertEqual(image_id, answer['bitstream_id'])
            self.assertEqual(image_id, self._held())
            # The report the agent sends at once, and the next one.
            self._wait_for_reports(2, 'after program %d' % attempt)
            self.assertEqual([image_id] * 3,
                             [self._recorded(index) for index in range(3)])
            line = 'Programming deployable %s with image %s' % (
                self.region['uuid'], image_id)
            nodes = [index for index, conductor in enumerate(self.conductors)
                     if line in conductor.log()]
            self.assertEqual(1, len(nodes), line)
            served.append(nodes[0])
            if nodes == [1]:
                break

        self.addDetail('programs', content.text_content(
            'program calls served by the conductors on nodes %s; %d '
            'reports meanwhile; %d Galera conflicts' % (
                served, self._reports_done() - reports,
                sum(self.conflicts()) - sum(before))))
        self.assertEqual(1, served[-1], 'the conductor on node 1 served no '
                         'program call of %d' % PROGRAMS)
        for conductor in self.conductors:
            self.assertEqual([], [line for line in conductor.log().splitlines()
                                  if any(words in line for words in CORRECTED)
                                  ], 'a report corrected the record')
        # The API on node 0 shows the last record too.
        self.assertEqual(image_id, self._api(
            'GET', '/v2/deployables/%s' % self.region['uuid'])[1][
                'bitstream_id'])
        self._assert_clean_stop([self.agent])
        self._assert_clean_stop([service for service in self.services
                                 if service is not self.agent])
