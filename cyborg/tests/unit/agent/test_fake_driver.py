"""The fake driver's simulated FPGA and the driver contract."""

from cyborg.agent.drivers import base as driver_base
from cyborg.agent.drivers import fake
from cyborg.common import vocabulary
from cyborg.tests import base


class TestFakeDriverDiscovery(base.TestCase):

    def setUp(self):
        super().setUp()
        self.devices = fake.FakeDriver().discover()

    def test_one_fpga_of_the_fake_vendor(self):
        self.assertEqual(1, len(self.devices))
        device = self.devices[0]
        self.assertIsInstance(device, driver_base.DriverDevice)
        self.assertEqual(('FPGA', '0xABCD'), (device.type, device.vendor))
        self.assertTrue(device.model)
        self.assertEqual('PCI', device.controlpath_id.cpid_type)
        self.assertEqual({'domain', 'bus', 'device', 'function'},
                         set(device.controlpath_id.cpid_info))

    def test_the_card_is_a_root_without_accelerators(self):
        [root] = self.devices[0].deployables
        self.assertIsInstance(root, driver_base.DriverDeployable)
        self.assertEqual(0, root.num_accelerators)
        self.assertNotIn('rc', root.attributes)
        self.assertEqual([], root.attach_handles)

    def test_one_region_with_one_accelerator_below_the_card(self):
        [root] = self.devices[0].deployables
        self.assertEqual(1, len(root.children))
        region = root.children[0]
        self.assertIsInstance(region, driver_base.DriverDeployable)
        self.assertTrue(region.name.startswith(root.name + '-'))
        self.assertEqual(1, region.num_accelerators)
        self.assertEqual({'rc': 'FPGA', 'trait1': 'CUSTOM_FAKE_DEVICE'},
                         region.attributes)
        self.assertEqual([], region.children)

    def test_region_is_attached_through_a_test_pci_handle(self):
        handles = self.devices[0].deployables[0].children[0].attach_handles
        self.assertEqual(1, len(handles))
        handle = handles[0]
        self.assertEqual('TEST_PCI', handle.attach_type)
        self.assertFalse(handle.in_use)
        self.assertEqual({'domain', 'bus', 'device', 'function'},
                         set(handle.attach_info))
        for value in handle.attach_info.values():
            self.assertIsInstance(value, str)

    def test_each_discovery_returns_fresh_objects(self):
        again = fake.FakeDriver().discover()
        again[0].deployables[0].children[0].attributes['rc'] = 'CHANGED'
        again[0].controlpath_id.cpid_info['bus'] = 'ff'

        self.assertEqual(self.devices, fake.FakeDriver().discover())


class TestFakeDriverProgramming(base.TestCase):

    def test_program_records_the_bitstream(self):
        driver = fake.FakeDriver()
        controlpath_id = driver.discover()[0].controlpath_id

        result = driver.program(controlpath_id, '/tmp/bitstream.bin')

        self.assertIs(vocabulary.ProgramResult.SUCCESS, result.code)
        self.assertEqual('/tmp/bitstream.bin',
                         driver.loaded_bitstream(controlpath_id))

    def test_program_of_an_unknown_device_fails(self):
        driver = fake.FakeDriver()
        other = driver_base.DriverControlpathId(
            cpid_type='PCI', cpid_info={'domain': '0000', 'bus': '99',
                                        'device': '00', 'function': '0'})

        result = driver.program(other, '/tmp/bitstream.bin')

        self.assertIs(vocabulary.ProgramResult.INVALID_DEPLOYABLE, result.code)
        self.assertIsNone(driver.loaded_bitstream(other))


class TestDriverContract(base.TestCase):

    def test_a_driver_must_implement_discover_and_program(self):
        class Incomplete(driver_base.Driver):
            def discover(self):
                return []

        self.assertRaises(TypeError, Incomplete)
