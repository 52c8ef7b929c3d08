"""The fake driver keeps what its FPGAs hold across restarts (fake_state).

A driver programs; a new driver of the same host and state path (the agent
started again) discovers the same cards, function, trait and PF/VF tree
included. Removing the state file is the power cycle: the cards come back
blank. Another host on the same machine has a file of its own.
"""

import json
import os

import fixtures

from cyborg import bitstream_topology
from cyborg.agent.drivers import base as driver_base
from cyborg.agent.drivers import fake
from cyborg.agent.drivers import fake_state
from cyborg.tests.unit.agent.drivers import test_fake
from cyborg.tests.unit.agent.drivers import test_fake_programming as cases

REGION1 = 'fpga-0000:10:00.0-region1'


class StateTestCase(test_fake.FakeDriverTestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MockPatch(
            'cyborg.agent.drivers.fake.time.sleep'))
        self.state_path = self.useFixture(fixtures.TempDir()).path
        self.logs = self.useFixture(fixtures.FakeLogger(
            name='cyborg.agent.drivers'))

    def driver(self, host='compute-1', state_path=None):
        """A started driver of the all-in-one's fleet for ``host``."""
        return fake.FakeDriver(inventory_path=str(cases.FLEET), host=host,
                               state_path=state_path or self.state_path)

    def program_region1(self, driver):
        devices = driver.discover()
        outcome = driver.program(
            devices[0].controlpath_id, '/tmp/aes.gbs',
            deployable_name=REGION1,
            bitstream=cases.metadata(topology=json.dumps(
                cases.SEED_TOPOLOGY)))
        self.assertTrue(outcome.succeeded, outcome)
        return driver.discover()

    def region1(self, devices):
        return next(region for region in test_fake.parts(devices[0])
                    if region.name == REGION1)

    def state_file(self, host='compute-1'):
        return fake_state.state_file(self.state_path, host)


class TestRestart(StateTestCase):

    def test_a_restarted_driver_shows_what_was_loaded(self):
        blank = self.driver().discover()
        programmed = self.program_region1(self.driver())
        self.assertNotEqual(blank, programmed)

        restarted = self.driver()

        self.assertEqual(programmed, restarted.discover())
        region = self.region1(restarted.discover())
        self.assertEqual('e1a5b2c3-0000-4000-8000-000000000001',
                         region.attributes['bitstream_id'])
        self.assertIn(cases.FUNCTION_TRAIT, region.attributes.values())
        self.assertEqual(['0000:10:00.1', '0000:10:00.2'],
                         [pf.attributes['pci_address']
                          for pf in region.children])
        self.assertEqual('crypto', region.children[1].attributes['capability'])
        self.assertEqual('/tmp/aes.gbs', restarted.loaded_bitstream(
            programmed[0].controlpath_id, REGION1))
        self.assertIn('hold what was loaded before the restart',
                      self.logs.output)
        # Written whole: no temporary file is left beside it.
        self.assertEqual([os.path.basename(self.state_file())],
                         os.listdir(self.state_path))

    def test_removing_the_file_is_a_power_cycle(self):
        blank = self.driver().discover()
        running = self.driver()
        programmed = self.program_region1(running)

        os.unlink(self.state_file())

        self.assertEqual(blank, self.driver().discover())
        # The running driver (the card still powered) holds it still.
        self.assertEqual(programmed, running.discover())

    def test_each_host_has_its_own_file(self):
        blank = self.driver('compute-2').discover()
        self.program_region1(self.driver('compute-1'))

        self.assertEqual(blank, self.driver('compute-2').discover())
        self.assertFalse(os.path.exists(self.state_file('compute-2')))
        self.assertNotEqual(self.state_file('compute-1'),
                            self.state_file('compute-2'))
        self.assertEqual(
            os.path.join(self.state_path, 'fake-driver-a_b.json'),
            fake_state.state_file(self.state_path, 'a/b'))

    def test_a_failed_programming_keeps_the_file_as_it_was(self):
        driver = self.driver()
        devices = driver.discover()
        outcome = driver.program(
            devices[0].controlpath_id, '/tmp/aes.gbs',
            deployable_name='fpga-0000:10:00.0-region7')

        self.assertFalse(outcome.succeeded)
        self.assertFalse(os.path.exists(self.state_file()))

    def test_both_regions_of_a_card_are_kept(self):
        driver = self.driver()
        devices = self.program_region1(driver)
        region0 = 'fpga-0000:10:00.0-region0'
        self.assertTrue(driver.program(
            devices[0].controlpath_id, '/tmp/other.gbs',
            deployable_name=region0, bitstream=cases.metadata(
                id='e1a5b2c3-0000-4000-8000-000000000002')).succeeded)

        with open(self.state_file(), encoding='utf-8') as stream:
            saved = json.load(stream)

        self.assertEqual({'0000:10:00.0': [region0, REGION1]},
                         {card: sorted(regions) for card, regions
                          in saved['cards'].items()})
        self.assertEqual('compute-1', saved['host'])
        self.assertEqual(driver.discover(), self.driver().discover())


class TestUnusableState(StateTestCase):

    def test_a_malformed_file_is_said_and_the_cards_start_blank(self):
        blank = self.driver().discover()
        for text in ('not json', '[]', '{"version": 2, "cards": {}}',
                     '{"version": 1, "cards": {"0000:10:00.0": '
                     '{"r": {"bitstream_path": 3}}}}',
                     '{"version": 1, "cards": {"0000:10:00.0": {"r": '
                     '{"bitstream_path": "/x", "topology": {"pf": 1}}}}}'):
            with open(self.state_file(), 'w', encoding='utf-8') as stream:
                stream.write(text)

            self.assertEqual(blank, self.driver().discover(), text)
        self.assertEqual(5, self.logs.output.count(
            'The simulated FPGAs start blank: their state file %s is '
            'unusable' % self.state_file()))

    def test_without_a_state_path_the_state_lasts_while_the_driver_runs(self):
        missing = os.path.join(self.state_path, 'missing')
        driver = self.driver(state_path=missing)
        blank = driver.discover()
        programmed = self.program_region1(driver)
        self.program_region1(driver)

        self.assertFalse(os.path.exists(missing))
        self.assertEqual(programmed, driver.discover())
        self.assertEqual(blank, self.driver(state_path=missing).discover())
        self.assertEqual(1, self.logs.output.count(
            'will not survive a restart of the agent'))


class TestTopologyRoundTrip(test_fake.FakeDriverTestCase):

    def test_a_topology_reads_back_as_it_was_written(self):
        for value in (cases.SEED_TOPOLOGY, cases.topology(2, 3),
                      cases.topology(1, 0)):
            parsed = bitstream_topology.parse_topology(value)

            self.assertEqual(parsed, bitstream_topology.parse_topology(
                fake_state.encode_topology(parsed)))


class TestReportsBitstreams(StateTestCase):

    def test_fpgas_say_they_report_what_they_hold_and_gpus_do_not(self):
        devices = self.driver().discover()

        self.assertEqual({'FPGA': {True}, 'GPU': {False}},
                         {kind: {device.reports_bitstreams
                                 for device in devices
                                 if device.type == kind}
                          for kind in ('FPGA', 'GPU')})
        self.assertTrue(driver_base.device_to_primitive(
            devices[0], 'fake_driver')['reports_bitstreams'])
        self.assertTrue(fake.FakeDriver(
            state_path=self.state_path).discover()[0].reports_bitstreams)
