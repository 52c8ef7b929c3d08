"""Programming an FPGA region as part of a bind (``bind_programming``).

The fixture of ``test_bind_transactions`` (a real agent with the fake
driver's simulated FPGAs over the fake:// transport, a recorder in place of
Nova) with a real Glance (``cyborg.tests.fixtures.glance``): the binder
resolves ``accel:bitstream_id`` and ``accel:function_id`` there with the
conductor's credentials, the agent downloads the image and the fake driver
programs the region as its fleet file says.
"""

import dataclasses
import os
import threading
import uuid

import fixtures
import microversion_parse
import sqlalchemy as sa
from oslo_utils import uuidutils

from cyborg import conf
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.api.views import arqs as arq_views
from cyborg.clients import glance as glance_client
from cyborg.conductor import arqs
from cyborg.conductor import binder as conductor_binder
from cyborg.conductor import programming
from cyborg.db import models
from cyborg.db.queries import history as history_queries
from cyborg.tests import base
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.unit.conductor import test_bind_transactions as cases
from cyborg.tests.unit.db import records
from cyborg.tests.unit.objects import test_list_statement_counts

REGION_ID = '9346116d97f4432b4fa2a3a4b6a1d2ab'
# Card 0: four handles; card 1: programming fails; card 2: another board;
# card 3: programming takes a second.
FLEET = """
fpgas:
  - {vendor: "0x8086", vendor_name: intel, board: pac_arria10,
     regions: [{id: "%(region)s", vfs_per_pf: 4}]}
  - {vendor: "0x8086", vendor_name: intel, board: pac_arria10,
     regions: [{id: "%(region)s", vfs_per_pf: 2,
                program: {result: failed}}]}
  - {vendor: "0x10ee", vendor_name: xilinx, board: u250,
     regions: [{vfs_per_pf: 2}]}
  - {vendor: "0x8086", vendor_name: intel, board: pac_arria10,
     regions: [{id: "%(region)s", vfs_per_pf: 2, program: {seconds: 1}}]}
""" % {'region': REGION_ID}
Deployable = cases.Deployable
History = models.HistoryEntry.__table__
API_VERSION = microversion_parse.Version(2, 3)


class ProgrammingBindTestsBase(cases.BindingTestsBase):
    """The binding fixture with Glance, the fleet above and a directory
    for the agent's downloads."""

    inventory = FLEET

    def setUp(self):
        self.useFixture(glance_fixture.GlanceFixture())
        super().setUp()
        self.downloads = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.MonkeyPatch('tempfile.tempdir',
                                             self.downloads))
        self.files = self.useFixture(fixtures.TempDir()).path

    def make_binder(self, host, nova=None, **settings):
        nova = self.nova if nova is None else nova
        binder = conductor_binder.Binder(
            host, dataclasses.replace(cases.SETTINGS, **settings),
            nova=lambda: nova,
            glance=lambda: glance_client.GlanceClient(conf.CONF))
        self.addCleanup(binder.stop)
        return binder

    def upload(self, board='pac_arria10', vendor='intel', function=None):
        """A bitstream image in Glance; its id."""
        path = os.path.join(self.files, uuid.uuid4().hex)
        with open(path, 'wb') as data:
            data.write(b'\x01bitstream')
        properties = {'bs-name': 'aes', 'bs-uuid': str(uuid.uuid4()),
                      'vendor': vendor, 'board': board, 'version': '1',
                      'driver_ver': '1', 'driver_path': '/opt',
                      'function_uuid': function or str(uuid.uuid4())}
        return glance_client.GlanceClient(conf.CONF).upload(
            path, 'aes', properties, ['FPGA'])['id']

    def make_profile(self, *groups):
        """A profile of ``groups`` (extra keys of one FPGA group each)."""
        return records.make_device_profile(self.context, groups=[
            dict({'resources:FPGA': '1'}, **group) for group in groups])

    def arq_of(self, profile, card, instance=None, group=0):
        arq = records.make_arq(
            self.context, profile, state='BindStarted',
            device_profile_group_id=group, hostname=cases.HOST,
            device_rp_uuid=self.providers[card],
            instance_uuid=instance or uuidutils.generate_uuid(),
            project_id='project-1')
        return arq.uuid

    def region(self, card):
        """The deployable row of card ``card``'s region."""
        with self.database.engine.connect() as connection:
            return connection.execute(sa.select(Deployable).where(
                Deployable.c.rp_uuid == self.providers[card])).one()

    def reason(self, arq_uuid):
        """The ARQ's reason as the API shows it (from microversion 2.3)."""
        return arq_views.one(self.arq(arq_uuid), API_VERSION,
                             'http://x')['state_reason']

    def statuses(self):
        return {event['tag']: event['status'] for event in self.nova.events()}


class BitstreamIdTests(ProgrammingBindTestsBase):

    def test_the_image_is_programmed_before_the_arq_is_bound(self):
        image = self.upload()
        arq_uuid = self.arq_of(
            self.make_profile({'accel:bitstream_id': image}), 0)

        self.assertEqual({arq_uuid: 'Bound'}, self.binder.bind([arq_uuid]))

        region = self.region(0)
        self.assertEqual([(region.name, image)], self.driver.programs)
        self.assertEqual(image, region.bitstream_id)
        self.assertIsNone(region.programming_owner)
        self.assertIsNone(self.reason(arq_uuid))
        self.assertEqual({arq_uuid: 'completed'}, self.statuses())
        # The agent's private download is gone (Glance, in this process,
        # keeps temporary files of its own there).
        self.assertEqual([], [name for name in os.listdir(self.downloads)
                              if name.startswith('cyborg-program-')])

    def loads(self, card):
        """(event, outcome, image, reason, agent) of the region's program
        entries, oldest first."""
        with self.database.engine.connect() as connection:
            return [tuple(row) for row in connection.execute(
                sa.select(History.c.event, History.c.outcome,
                          History.c.image_id, History.c.reason,
                          History.c.agent).where(
                    History.c.deployable_id == self.region(card).id,
                    History.c.event == 'program').order_by(History.c.id))]

    def test_a_load_of_a_bind_is_in_the_regions_history(self):
        image = self.upload()
        profile = self.make_profile({'accel:bitstream_id': image})
        self.binder.bind([self.arq_of(profile, 0)])
        # A second bind of it loads nothing: no second entry.
        self.binder.bind([self.arq_of(profile, 0)])

        self.assertEqual([('program', 'ok', image, None, cases.HOST)],
                         self.loads(0))

    def test_a_failed_load_of_a_bind_is_in_the_history_as_failed(self):
        image = self.upload()
        self.binder.bind([self.arq_of(
            self.make_profile({'accel:bitstream_id': image}), 1)])

        self.assertEqual(
            [('program', 'failed', None, history_queries.UNKNOWN_LOAD,
              cases.HOST)], self.loads(1))

    def test_a_region_holding_the_image_is_not_programmed_again(self):
        image = self.upload()
        profile = self.make_profile({'accel:bitstream_id': image})
        first = self.arq_of(profile, 0)
        self.binder.bind([first])

        second = self.arq_of(profile, 0)

        self.assertEqual({second: 'Bound'}, self.binder.bind([second]))
        self.assertEqual(1, len(self.driver.programs))
        self.assertEqual({first: 'completed', second: 'completed'},
                         self.statuses())

    def test_arqs_of_a_batch_wanting_one_image_program_it_once(self):
        image = self.upload()
        profile = self.make_profile({'accel:bitstream_id': image})
        instance = uuidutils.generate_uuid()
        arq_uuids = [self.arq_of(profile, 0, instance) for _ in range(3)]

        self.assertEqual(dict.fromkeys(arq_uuids, 'Bound'),
                         self.binder.bind(arq_uuids))
        self.assertEqual(1, len(self.driver.programs))
        self.assertEqual(3, self.handles_in_use())

    def test_a_failed_program_fails_the_bind_with_the_drivers_message(self):
        image = self.upload()
        arq_uuid = self.arq_of(
            self.make_profile({'accel:bitstream_id': image}), 1)

        self.assertEqual({arq_uuid: 'BindFailed'},
                         self.binder.bind([arq_uuid]))

        reason = self.reason(arq_uuid)
        self.assertIn('simulated FAILED programming image %s' % image,
                      reason)
        self.assertNotIn(self.downloads, reason)
        self.assertIsNone(self.arq(arq_uuid).attach_handle_uuid)
        self.assertEqual(0, self.handles_in_use())
        region = self.region(1)
        self.assertIsNone(region.bitstream_id)
        self.assertIsNone(region.programming_owner)
        self.assertEqual({arq_uuid: 'failed'}, self.statuses())

    def test_an_image_that_does_not_fit_fails_naming_why(self):
        image = self.upload(board='u250')
        arq_uuid = self.arq_of(
            self.make_profile({'accel:bitstream_id': image}), 0)

        self.assertEqual({arq_uuid: 'BindFailed'},
                         self.binder.bind([arq_uuid]))
        self.assertIn("Its board 'u250' is not the device's board",
                      self.reason(arq_uuid))
        self.assertEqual([], self.driver.programs)
        self.assertEqual(0, self.handles_in_use())

    def test_an_unknown_image_fails(self):
        missing = str(uuid.uuid4())
        arq_uuid = self.arq_of(
            self.make_profile({'accel:bitstream_id': missing}), 0)

        self.assertEqual({arq_uuid: 'BindFailed'},
                         self.binder.bind([arq_uuid]))
        self.assertIn('names image %s, which Glance does not have' % missing,
                      self.reason(arq_uuid))
        self.assertEqual({arq_uuid: 'failed'}, self.statuses())

    def test_a_region_another_bind_holds_is_not_reprogrammed(self):
        first = self.arq_of(self.make_profile({'accel:bitstream_id':
                                               self.upload()}), 0)
        self.binder.bind([first])
        other = self.upload()
        second = self.arq_of(
            self.make_profile({'accel:bitstream_id': other}), 0)

        self.assertEqual({second: 'BindFailed'}, self.binder.bind([second]))
        self.assertIn('is used by ARQ %s' % first, self.reason(second))
        self.assertEqual(1, len(self.driver.programs))
        self.assertEqual('Bound', self.arq(first).state)
        self.assertIsNone(self.region(0).programming_owner)

    def test_arqs_of_a_batch_wanting_two_images_on_one_region(self):
        profile = self.make_profile({'accel:bitstream_id': self.upload()},
                                    {'accel:bitstream_id': self.upload()})
        instance = uuidutils.generate_uuid()
        first = self.arq_of(profile, 0, instance, group=0)
        second = self.arq_of(profile, 0, instance, group=1)

        self.assertEqual({first: 'Bound', second: 'BindFailed'},
                         self.binder.bind([first, second]))
        self.assertIn('ARQ %s of this bind has deployable' % first,
                      self.reason(second))
        self.assertEqual(1, len(self.driver.programs))


class FunctionIdTests(ProgrammingBindTestsBase):

    def test_the_one_image_of_the_function_that_fits_is_programmed(self):
        function = str(uuid.uuid4())
        # Stored without dashes, as another client may write it.
        image = self.upload(function=function.replace('-', ''))
        # Also the function's, but for another board.
        self.upload(function=function, board='u250')
        arq_uuid = self.arq_of(self.make_profile({'accel:function_id':
                                                  function.upper()}), 0)

        self.assertEqual({arq_uuid: 'Bound'}, self.binder.bind([arq_uuid]))
        self.assertEqual([(self.region(0).name, image)], self.driver.programs)
        self.assertEqual(image, self.region(0).bitstream_id)
        self.assertEqual({arq_uuid: 'completed'}, self.statuses())

    def test_no_image_of_the_function_fails(self):
        function = str(uuid.uuid4())
        arq_uuid = self.arq_of(self.make_profile({'accel:function_id':
                                                  function}), 0)

        self.assertEqual({arq_uuid: 'BindFailed'},
                         self.binder.bind([arq_uuid]))
        self.assertIn('no bitstream in Glance provides function %s'
                      % function, self.reason(arq_uuid))
        self.assertEqual([], self.driver.programs)
        self.assertEqual({arq_uuid: 'failed'}, self.statuses())

    def test_a_function_id_that_is_no_uuid_fails(self):
        arq_uuid = self.arq_of(self.make_profile({'accel:function_id':
                                                  'gzip'}), 0)

        self.assertEqual({arq_uuid: 'BindFailed'},
                         self.binder.bind([arq_uuid]))
        self.assertIn("accel:function_id 'gzip' is not a function UUID",
                      self.reason(arq_uuid))

    def test_two_images_of_the_function_fail_naming_both(self):
        function = str(uuid.uuid4())
        images = sorted([self.upload(function=function),
                         self.upload(function=function)])
        arq_uuid = self.arq_of(self.make_profile({'accel:function_id':
                                                  function}), 0)

        self.assertEqual({arq_uuid: 'BindFailed'},
                         self.binder.bind([arq_uuid]))
        reason = self.reason(arq_uuid)
        self.assertIn('several bitstreams', reason)
        self.assertIn('%s, %s' % tuple(images), reason)
        self.assertEqual([], self.driver.programs)
        self.assertEqual({arq_uuid: 'failed'}, self.statuses())


class ProgramRequestRaceTests(ProgrammingBindTestsBase):
    """A program request and a bind that programs, on card 3's region
    (programming it takes a second): exactly one of them wins."""

    def setUp(self):
        super().setUp()
        self.wanted, self.other = self.upload(), self.upload()
        self.target = self.region(3)
        self.arq_uuid = records.make_arq(
            self.context,
            self.make_profile({'accel:bitstream_id': self.wanted}),
            project_id='project-1').uuid
        self.programmer = programming.Programmer(
            'conductor-1', programming.ProgramSettings(timeout=30),
            agent_rpcapi.AgentAPI(),
            glance_for=lambda context: glance_client.GlanceClient(
                conf.CONF, context))
        self.outcome = {}

    def bind(self, start=None):
        if start is not None:
            start.wait()
        # Recorded alone (nothing leased nor claimed); this thread then
        # finishes it rather than a worker.
        arqs.record_bind(self.context, {
            self.arq_uuid: {'hostname': cases.HOST,
                            'device_rp_uuid': self.target.rp_uuid,
                            'instance_uuid': uuidutils.generate_uuid()}})
        self.outcome['bind'] = self.binder.bind(
            [self.arq_uuid])[self.arq_uuid]

    def program(self, start=None):
        if start is not None:
            start.wait()
        try:
            self.programmer.program(self.context, self.target.uuid,
                                    self.other)
        except (programming.DeployableInUse,
                programming.DeployableBeingProgrammed) as error:
            self.outcome['program'] = error
        else:
            self.outcome['program'] = 'programmed'

    def assert_one_winner(self):
        winners = [name for name, won in (
            ('bind', self.outcome['bind'] == 'Bound'),
            ('program', self.outcome['program'] == 'programmed')) if won]
        self.assertEqual(1, len(winners), self.outcome)
        self.assertEqual(1, len(self.driver.programs))
        region = self.region(3)
        self.assertEqual(self.wanted if winners == ['bind'] else self.other,
                         region.bitstream_id)
        self.assertIsNone(region.programming_owner)
        return winners[0]

    def test_at_the_same_time_one_wins(self):
        start = threading.Barrier(2)
        threads = [threading.Thread(target=self.bind, args=(start,)),
                   threading.Thread(target=self.program, args=(start,))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)

        self.assert_one_winner()

    def test_a_bind_recorded_first_wins(self):
        arqs.record_bind(self.context, {
            self.arq_uuid: {'hostname': cases.HOST,
                            'device_rp_uuid': self.target.rp_uuid,
                            'instance_uuid': uuidutils.generate_uuid()}})
        self.program()
        self.outcome['bind'] = self.binder.bind(
            [self.arq_uuid])[self.arq_uuid]

        self.assertEqual('bind', self.assert_one_winner())
        self.assertIsInstance(self.outcome['program'],
                              programming.DeployableInUse)

    def test_a_program_request_that_started_first_wins(self):
        thread = threading.Thread(target=self.program)
        thread.start()
        self.addCleanup(thread.join, 60)
        self.assertTrue(cases.wait_for(
            lambda: self.region(3).programming_owner is not None))
        self.bind()
        thread.join(60)

        self.assertEqual('program', self.assert_one_winner())
        self.assertIn('is being programmed', self.reason(self.arq_uuid))


class ProgrammingStatementCountTests(ProgrammingBindTestsBase):

    def count(self, arq_count, image):
        profile = self.make_profile({'accel:bitstream_id': image})
        instance = uuidutils.generate_uuid()
        arq_uuids = [self.arq_of(profile, 0, instance)
                     for _ in range(arq_count)]
        with test_list_statement_counts.counting_statements(
                self.database.engine) as statements:
            ended = self.binder.bind(arq_uuids)
        self.assertEqual(['Bound'] * arq_count, list(ended.values()))
        self.execute(sa.update(cases.ARQ).values(state='Unbound',
                                                 attach_handle_id=None,
                                                 deployable_id=None))
        self.execute(sa.update(cases.AttachHandle).values(in_use=False))
        self.execute(sa.update(Deployable).values(bitstream_id=None))
        return len(statements)

    def test_statements_do_not_grow_with_the_batch(self):
        image = self.upload()
        self.assertEqual(self.count(1, image), self.count(4, image))
        self.assertEqual(2, len(self.driver.programs))


class SQLiteBitstreamIdTests(BitstreamIdTests, base.TestCase):
    pass


class SQLiteFunctionIdTests(FunctionIdTests, base.TestCase):
    pass


class SQLiteProgramRequestRaceTests(ProgramRequestRaceTests, base.TestCase):
    pass


class SQLiteProgrammingStatementCountTests(ProgrammingStatementCountTests,
                                           base.TestCase):
    pass
