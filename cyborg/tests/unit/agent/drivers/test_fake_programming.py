"""The fake driver's simulated programming: outcomes, function, topology."""

import copy
import pathlib
import threading

import fixtures

from cyborg import bitstream
from cyborg import bitstream_topology
from cyborg.agent.drivers import base as driver_base
from cyborg.agent.drivers import fake
from cyborg.agent.drivers import fake_inventory
from cyborg.agent.drivers import fake_fpga
from cyborg.common import vocabulary
from cyborg.tests.unit.agent.drivers import test_fake

FLEET = pathlib.Path(fake.__file__).parents[2] / 'aio' / 'fleet.yaml'
Result = vocabulary.ProgramResult
FUNCTION = 'a1b2c3d4-0000-4000-8000-00000000f00d'
FUNCTION_TRAIT = 'CUSTOM_FPGA_FUNCTION_ID_A1B2C3D400004000800000000000F00D'
# A bitstream's topology: 2 PFs with a VF each.
SEED_TOPOLOGY = {
    'pf_num': 2, 'vf_num': 2,
    'pf': [{'name': 'pf_1', 'capability': '', 'kpi': '', 'pci_offset': '0',
            'vf': [{'name': 'vf_1', 'pci_offset': '1'}]},
           {'name': 'pf_2', 'capability': 'crypto', 'kpi': '',
            'pci_offset': '2', 'vf': [{'name': 'vf_2', 'pci_offset': '3'}]}]}


def topology(pfs, vfs_per_pf):
    """A topology of ``pfs`` PFs with ``vfs_per_pf`` VFs each."""
    return {'pf': [{'name': 'pf_%d' % pf,
                    'vf': [{'name': 'vf_%d_%d' % (pf, vf)}
                           for vf in range(vfs_per_pf)]}
                   for pf in range(pfs)]}


def metadata(**changes):
    """A bitstream with its metadata (its Glance image) with ``changes``."""
    image = {'id': 'e1a5b2c3-0000-4000-8000-000000000001', 'tags': ['FPGA'],
             'bs-name': 'aes-128', 'bs-uuid': bitstream.normalize_uuid(
                 '5f1c2d7e8a904c2a9a556f1c2d7e8a90'),
             'vendor': '0xabcd', 'board': 'fake_board', 'version': '1.0',
             'driver_ver': '1.0', 'driver_path': '/opt/fake/',
             'function_uuid': FUNCTION, 'function_name': 'aes'}
    image.update(changes)
    return bitstream.Bitstream.from_image(image)


def regions(device):
    return test_fake.parts(device)


def pci_functions(region):
    """The PCI addresses of the PFs and VFs below ``region``."""
    return [deployable.attributes['pci_address']
            for pf in region.children for deployable in [pf] + pf.children]


def handle_addresses(region):
    return [driver_base.pci_address(handle.attach_info)
            for handle in region.attach_handles]


class ProgrammingTestCase(test_fake.FakeDriverTestCase):

    def setUp(self):
        super().setUp()
        self.sleep = self.useFixture(fixtures.MockPatch(
            'cyborg.agent.drivers.fake.time.sleep')).mock

    def driver(self, regions_data, count=1, gpus=0):
        """A driver of ``count`` FPGAs with ``regions_data``, discovered."""
        data = {'fpgas': [{'count': count, 'regions': regions_data}],
                'gpus': [{}] * gpus}
        driver = fake.FakeDriver(inventory_path=self.inventory_file(data),
                                 host='compute-1')
        return driver, driver.discover()


class TestOutcomes(ProgrammingTestCase):

    def test_success_by_default_and_instant(self):
        driver, devices = self.driver([{}])

        outcome = driver.program(devices[0].controlpath_id, '/tmp/a.gbs')

        self.assertEqual(driver_base.ProgramOutcome(
            Result.SUCCESS, 'simulated loading of /tmp/a.gbs into '
            'fpga-0000:10:00.0-region0 in 0 seconds'), outcome)
        self.sleep.assert_not_called()

    def test_duration_is_honoured(self):
        driver, devices = self.driver([{'program': {'seconds': 0.2}}])

        driver.program(devices[0].controlpath_id, '/tmp/a.gbs')

        self.sleep.assert_called_once_with(0.2)

    def test_configured_failures_leave_the_region_as_it_was(self):
        for name, code in (('failed', Result.FAILED),
                           ('invalid_bitstream', Result.INVALID_BITSTREAM),
                           ('invalid_deployable', Result.INVALID_DEPLOYABLE)):
            driver, devices = self.driver([{'program': {
                'seconds': 1, 'result': name,
                'topology_after': topology(2, 3)}}])

            outcome = driver.program(devices[0].controlpath_id, '/tmp/a.gbs',
                                     bitstream=metadata())

            self.assertIs(code, outcome.code)
            self.assertFalse(outcome.succeeded)
            self.assertIn('simulated %s programming /tmp/a.gbs into '
                          'fpga-0000:10:00.0-region0' % code.name,
                          outcome.message)
            self.assertEqual(devices, driver.discover())
            self.assertIsNone(driver.loaded_bitstream(
                devices[0].controlpath_id))
        self.assertEqual(3, self.sleep.call_count)

    def test_result_codes_are_the_wire_integers(self):
        self.assertEqual([0, 1, 2, 3], [Result.SUCCESS, Result.FAILED,
                                        Result.INVALID_DEPLOYABLE,
                                        Result.INVALID_BITSTREAM])
        # The name used before the programming result codes still works.
        self.assertIs(Result.FAILED, Result.FAILURE)


class TestTargets(ProgrammingTestCase):

    def assert_invalid_deployable(self, outcome, words):
        self.assertIs(Result.INVALID_DEPLOYABLE, outcome.code)
        self.assertIn(words, outcome.message)

    def test_unknown_region_is_an_invalid_deployable(self):
        driver, devices = self.driver([{}, {}])
        controlpath_id = devices[0].controlpath_id

        self.assert_invalid_deployable(
            driver.program(controlpath_id, '/tmp/a.gbs',
                           deployable_name='fpga-0000:10:00.0-region7'),
            'fpga-0000:10:00.0-region7 is not a region of the FPGA at '
            '0000:10:00.0')
        # The card's root is not a region.
        self.assert_invalid_deployable(
            driver.program(controlpath_id, '/tmp/a.gbs',
                           deployable_name='fpga-0000:10:00.0'),
            'is not a region')
        # Neither is a region of another card.
        self.assert_invalid_deployable(
            driver.program(controlpath_id, '/tmp/a.gbs',
                           deployable_name='fpga-0000:11:00.0-region0'),
            'is not a region')
        self.sleep.assert_not_called()

    def test_a_card_of_several_regions_needs_the_region_named(self):
        driver, devices = self.driver([{}, {}])

        self.assert_invalid_deployable(
            driver.program(devices[0].controlpath_id, '/tmp/a.gbs'),
            'the FPGA at 0000:10:00.0 has 2 regions (fpga-0000:10:00.0-'
            'region0, fpga-0000:10:00.0-region1): name one')
        self.assertTrue(driver.program(
            devices[0].controlpath_id, '/tmp/a.gbs',
            deployable_name='fpga-0000:10:00.0-region1').succeeded)
        self.assertEqual('/tmp/a.gbs', driver.loaded_bitstream(
            devices[0].controlpath_id, 'fpga-0000:10:00.0-region1'))
        self.assertIsNone(driver.loaded_bitstream(
            devices[0].controlpath_id, 'fpga-0000:10:00.0-region0'))

    def test_a_gpu_cannot_be_programmed(self):
        driver, devices = self.driver([{}], gpus=1)

        self.assert_invalid_deployable(
            driver.program(devices[1].controlpath_id, '/tmp/a.gbs'),
            'no simulated FPGA has control path 0000:11:00.0')


class TestProgrammedRegion(ProgrammingTestCase):

    def test_function_of_the_metadata_replaces_the_regions(self):
        driver, devices = self.driver(
            [{'function_id': 'f00d'}, {'function_id': 'beef'}])
        before = copy.deepcopy(devices)

        outcome = driver.program(
            devices[0].controlpath_id, '/tmp/a.gbs',
            deployable_name='fpga-0000:10:00.0-region0', bitstream=metadata())
        after = driver.discover()

        self.assertTrue(outcome.succeeded)
        first, second = regions(after[0])
        self.assertEqual(
            dict(regions(before[0])[0].attributes,
                 function_id=FUNCTION.replace('-', ''), function_name='aes',
                 bitstream_id='e1a5b2c3-0000-4000-8000-000000000001',
                 trait3=FUNCTION_TRAIT),
            first.attributes)
        self.assertEqual('CUSTOM_FPGA_FUNCTION_ID_F00D',
                         regions(before[0])[0].attributes['trait3'])
        # Its functions, and the card's other region, are as they were.
        self.assertEqual(regions(before[0])[0].attach_handles,
                         first.attach_handles)
        self.assertEqual(regions(before[0])[1], second)
        self.assertEqual(after, driver.discover())

    def test_without_metadata_only_the_file_is_recorded(self):
        driver, devices = self.driver([{'function_id': 'f00d'}])

        driver.program(devices[0].controlpath_id, '/tmp/a.gbs')

        self.assertEqual(devices, driver.discover())
        self.assertEqual('/tmp/a.gbs', driver.loaded_bitstream(
            devices[0].controlpath_id))

    def test_topology_of_2_pfs_with_3_vfs_rebuilds_the_region_only(self):
        driver, devices = self.driver(
            [{'vfs_per_pf': 4, 'program': {'topology_after': topology(2, 3)}},
             {'pfs': 2, 'vfs_per_pf': 2}], count=2)
        before = copy.deepcopy(devices)

        outcome = driver.program(
            devices[0].controlpath_id, '/tmp/a.gbs',
            deployable_name='fpga-0000:10:00.0-region0')
        after = driver.discover()

        self.assertTrue(outcome.succeeded, outcome.message)
        region, other = regions(after[0])
        self.assertEqual(
            [('fpga-0000:10:00.0-region0-pf0', '0000:10:00.0', '3', 'pf_0'),
             ('fpga-0000:10:00.0-region0-pf1', '0000:10:00.3', '3', 'pf_1')],
            [(pf.name, pf.attributes['pci_address'],
              pf.attributes['num_vfs'], pf.attributes['topology_name'])
             for pf in region.children])
        self.assertEqual(
            [['fpga-0000:10:00.0-region0-pf%d-vf%d' % (pf, vf)
              for vf in range(3)] for pf in range(2)],
            [[vf.name for vf in pf.children] for pf in region.children])
        self.assertEqual(['vf_1_0', 'vf_1_1', 'vf_1_2'],
                         [vf.attributes['topology_name']
                          for vf in region.children[1].children])
        # The region's four old VFs and the lowest free ones: the other
        # region keeps 00.1, 00.2 and 01.4 to 01.7.
        vfs = ['0000:10:01.0', '0000:10:01.1', '0000:10:01.2',
               '0000:10:01.3', '0000:10:02.0', '0000:10:02.1']
        self.assertEqual(vfs, handle_addresses(region))
        self.assertEqual({'TEST_PCI'}, {handle.attach_type
                                        for handle in region.attach_handles})
        self.assertEqual(6, region.num_accelerators)
        self.assertEqual(regions(before[0])[0].attributes, region.attributes)
        self.assertEqual(regions(before[0])[1], other)
        self.assertEqual(before[1], after[1])
        used = pci_functions(region) + pci_functions(other)
        self.assertEqual(len(used), len(set(used)))
        self.assertEqual(after, driver.discover())

    def test_the_bitstreams_topology_comes_before_the_files(self):
        driver, devices = self.driver(
            [{'program': {'topology_after': topology(2, 3)}}])

        driver.program(devices[0].controlpath_id, '/tmp/a.gbs',
                       bitstream=metadata(topology=SEED_TOPOLOGY))

        [region] = regions(driver.discover()[0])
        self.assertEqual(
            [('pf_1', '0000:10:00.0', ['0000:10:01.0']),
             ('pf_2', '0000:10:00.1', ['0000:10:01.1'])],
            [(pf.attributes['topology_name'], pf.attributes['pci_address'],
              [vf.attributes['pci_address'] for vf in pf.children])
             for pf in region.children])
        self.assertEqual('crypto', region.children[1].attributes['capability'])
        self.assertNotIn('capability', region.children[0].attributes)
        self.assertEqual(2, len(region.attach_handles))

    def test_a_topology_that_does_not_fit_is_an_invalid_bitstream(self):
        driver, devices = self.driver(
            [{'pfs': 6}, {'program': {'seconds': 3}}])

        outcome = driver.program(
            devices[0].controlpath_id, '/tmp/a.gbs',
            deployable_name='fpga-0000:10:00.0-region1',
            bitstream=metadata(topology=topology(3, 0)))

        self.assertIs(Result.INVALID_BITSTREAM, outcome.code)
        self.assertEqual('topology of 3 PFs and 0 VFs does not fit region '
                         'fpga-0000:10:00.0-region1: the card has 2 PFs and '
                         '248 VFs free', outcome.message)
        self.assertEqual(devices, driver.discover())
        self.sleep.assert_not_called()

    def test_a_pf_without_vfs_is_attached_itself(self):
        driver, devices = self.driver([{}])

        driver.program(devices[0].controlpath_id, '/tmp/a.gbs',
                       bitstream=metadata(topology=topology(2, 0)))

        [region] = regions(driver.discover()[0])
        self.assertEqual(['0000:10:00.0', '0000:10:00.1'],
                         handle_addresses(region))
        self.assertEqual([[], []], [pf.children for pf in region.children])

    def test_the_default_fpga_is_programmed_too(self):
        driver = fake.FakeDriver()

        self.assertTrue(driver.program(
            fake.CONTROLPATH_ID, '/tmp/a.gbs',
            bitstream=metadata(topology=topology(1, 2))).succeeded)

        [region] = regions(driver.discover()[0])
        self.assertEqual(['0000:0c:01.0', '0000:0c:01.1'],
                         handle_addresses(region))
        self.assertEqual(FUNCTION_TRAIT, region.attributes['trait2'])
        self.assertEqual('CUSTOM_FAKE_DEVICE', region.attributes['trait1'])

    def test_a_card_removed_from_the_file_forgets_its_bitstream(self):
        driver, devices = self.driver([{'function_id': 'f00d'}], count=2)
        driver.program(devices[1].controlpath_id, '/tmp/a.gbs',
                       bitstream=metadata())
        self.inventory_file({'fpgas': [{'regions': [
            {'function_id': 'f00d'}]}]})
        driver.discover()
        self.inventory_file({'fpgas': [{'count': 2, 'regions': [
            {'function_id': 'f00d'}]}]})

        self.assertEqual(devices, driver.discover())

    def test_concurrent_programming_of_many_regions(self):
        driver, devices = self.driver([{}, {}, {}, {}], count=4)
        targets = [(device.controlpath_id, region.name)
                   for device in devices for region in regions(device)]
        outcomes = []

        def program(controlpath_id, name):
            outcomes.append(driver.program(
                controlpath_id, '/tmp/%s.gbs' % name, deployable_name=name,
                bitstream=metadata(topology=topology(1, 1))))

        threads = [threading.Thread(target=program, args=target)
                   for target in targets]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        self.assertEqual(16, len(outcomes))
        self.assertTrue(all(outcome.succeeded for outcome in outcomes))
        for controlpath_id, name in targets:
            self.assertEqual('/tmp/%s.gbs' % name,
                             driver.loaded_bitstream(controlpath_id, name))
        for device in driver.discover():
            used = [address for region in regions(device)
                    for address in pci_functions(region)]
            self.assertEqual(8, len(set(used)))
            self.assertEqual(len(used), len(set(used)))


class TestFleetExample(ProgrammingTestCase):

    def test_the_fleets_example_region_shows_its_topology_after(self):
        driver = fake.FakeDriver(inventory_path=str(FLEET), host='compute-1')
        devices = driver.discover()
        intel = devices[0]
        region = 'fpga-0000:10:00.0-region1'

        outcome = driver.program(intel.controlpath_id, '/tmp/a.gbs',
                                 deployable_name=region)

        self.assertTrue(outcome.succeeded)
        self.sleep.assert_called_once_with(0.2)
        after = driver.discover()
        programmed = regions(after[0])[1]
        self.assertEqual(region, programmed.name)
        self.assertEqual(4, len(programmed.attach_handles))
        self.assertEqual(regions(intel)[0], regions(after[0])[0])
        self.assertEqual(devices[1:], after[1:])


class TestProgramKey(ProgrammingTestCase):
    """A bad ``program`` key fails the discovery, naming it."""

    def assert_refused(self, data, words):
        error = self.assertRaises(driver_base.DiscoveryFailed, self.discover,
                                  data)
        self.assertIn('inventory.yaml is unusable', str(error))
        self.assertIn(words, str(error))

    def test_bad_program_keys_are_named(self):
        where = 'fpgas[0].regions[0].program'
        for program, words in (
                ({'result': 'maybe'}, where + ".result: expected one of "
                 "success, failed, invalid_deployable, invalid_bitstream, "
                 "got 'maybe'"),
                ({'seconds': -1}, where + '.seconds: expected a '
                 'non-negative number, got -1'),
                ({'seconds': 'long'}, where + '.seconds: expected a '
                 'non-negative number'),
                ({'seconds': 601}, where + '.seconds: at most 600'),
                ({'topology_after': {'pf': 'x'}}, where + '.topology_after: '
                 'topology: pf must be a list'),
                ({'topology_after': topology(9, 0)}, where +
                 '.topology_after: 9 PFs and 0 VFs, at most 8 and 248 fit '
                 'a card'),
                ({'retries': 1}, where + '.retries: unknown key'),
                ('fast', where + ': expected a dict')):
            self.assert_refused({'fpgas': [{'regions': [
                {'program': program}]}]}, words)

    def test_defaults(self):
        inventory = fake_inventory.validate_inventory({'fpgas': [{'regions': [
            {}, {'program': {'seconds': 0.5, 'result': 'failed',
                             'topology_after': SEED_TOPOLOGY}}]}]})

        first, second = inventory['fpgas'][0]['regions']
        self.assertEqual(fake_fpga.DEFAULT_SETTINGS, first['program'])
        self.assertEqual(fake_fpga.Settings(
            seconds=0.5, result=Result.FAILED,
            topology_after=bitstream_topology.parse_topology(SEED_TOPOLOGY)),
            second['program'])
