"""The helpers every driver shares: trait names, PCI addresses, sysfs reads."""

import logging
import os

import fixtures

from cyborg.agent.drivers import base as driver_base
from cyborg.agent.drivers import sysfs
from cyborg.tests import base
from cyborg.tests.unit.agent.drivers import sysfs_tree


class TestCustomTrait(base.TestCase):

    def test_parts_are_joined_upper_cased_and_prefixed(self):
        self.assertEqual('CUSTOM_FPGA_INTEL_PAC_ARRIA10',
                         driver_base.custom_trait('fpga', 'Intel',
                                                  'pac_arria10'))

    def test_characters_a_trait_cannot_hold_become_one_underscore(self):
        self.assertEqual('CUSTOM_NVIDIA_1EB8_T4_1B',
                         driver_base.custom_trait('NVIDIA', '1eb8', 'T4-1B'))
        self.assertEqual('CUSTOM_FPGA_REGION_9346_116D',
                         driver_base.custom_trait('FPGA', 'REGION',
                                                  '-9346--116d-'))
        self.assertEqual('CUSTOM_A_B', driver_base.custom_trait('a.é b'))

    def test_an_existing_prefix_is_not_doubled(self):
        self.assertEqual('CUSTOM_FAKE_DEVICE',
                         driver_base.custom_trait('CUSTOM_FAKE_DEVICE'))
        self.assertEqual('CUSTOM_FAKE', driver_base.custom_trait('custom',
                                                                 'fake'))

    def test_empty_parts_are_left_out(self):
        self.assertEqual('CUSTOM_PCI_8086',
                         driver_base.custom_trait('PCI', '', None, '--',
                                                  '8086'))

    def test_no_name_at_all_is_refused(self):
        self.assertRaises(ValueError, driver_base.custom_trait, '--', '')
        self.assertRaises(ValueError, driver_base.custom_trait, 'custom')

    def test_long_names_are_cut_to_placements_limit(self):
        trait = driver_base.custom_trait('X' * 300)
        self.assertEqual(255, len(trait))
        self.assertTrue(trait.startswith('CUSTOM_XXX'))

    def test_names_are_valid_placement_traits(self):
        for parts in [('a-b', 'c d'), ('ünï', 'côdé'), ('0x10DE',), ('_x_',)]:
            trait = driver_base.custom_trait(*parts)
            self.assertRegex(trait, r'^CUSTOM_[A-Z0-9_]+$')
            self.assertFalse(trait.endswith('_'))

    def test_trait_attributes_are_numbered(self):
        self.assertEqual({'trait0': 'CUSTOM_A', 'trait1': 'CUSTOM_B'},
                         driver_base.trait_attributes(['CUSTOM_A',
                                                       'CUSTOM_B']))


class TestPCIAddress(base.TestCase):

    def test_address_info_is_lower_case_strings(self):
        self.assertEqual({'domain': '0000', 'bus': '5e', 'device': '1f',
                          'function': '7'},
                         driver_base.pci_address_info('0000:5E:1F.7'))
        self.assertEqual('0000:5e:1f.7', driver_base.pci_address(
            driver_base.pci_address_info('0000:5E:1F.7')))

    def test_malformed_addresses_are_refused(self):
        for text in ('0000:5e:00', '5e:00.0', '0000:5e:00.8', 'virtfn0', ''):
            self.assertFalse(driver_base.is_pci_address(text))
            self.assertRaises(ValueError, driver_base.pci_address_info, text)

    def test_attach_handle_carries_extra_keys(self):
        handle = driver_base.pci_attach_handle('0000:3d:00.0', 'MDEV',
                                               asked_type='nvidia-222')
        self.assertEqual('MDEV', handle.attach_type)
        self.assertEqual('nvidia-222', handle.attach_info['asked_type'])
        self.assertEqual('3d', handle.attach_info['bus'])

    def test_vendor_names(self):
        self.assertEqual('INTEL', driver_base.vendor_name(0x8086))
        self.assertEqual('1234', driver_base.vendor_name(0x1234))


class TestSysfsReader(base.TestCase):

    def setUp(self):
        super().setUp()
        self.tree = self.useFixture(sysfs_tree.SysfsTree({'files': {
            'good': '0x8086', 'garbage': 'not a number', 'text': ' hello '}}))
        self.sysfs = sysfs.Sysfs(self.tree.root)
        self.log = self.useFixture(fixtures.FakeLogger(
            name='cyborg.agent.drivers', level=logging.WARNING))

    def test_reads_stripped_text_and_numbers(self):
        self.assertEqual('hello', self.sysfs.read('text'))
        self.assertEqual(0x8086, self.sysfs.read_int('good', base=16))
        self.assertEqual('', self.log.output)

    def test_missing_file_gives_none_and_one_warning_with_its_path(self):
        for _ in range(3):
            self.assertIsNone(self.sysfs.read('absent'))
        path = os.path.join(self.tree.root, 'absent')
        self.assertEqual(1, self.log.output.count(path))
        self.assertIn('missing', self.log.output)

    def test_optional_missing_file_is_quiet(self):
        self.assertIsNone(self.sysfs.read('absent', required=False))
        self.assertEqual('', self.log.output)

    def test_malformed_number_gives_none_and_one_warning(self):
        self.assertIsNone(self.sysfs.read_int('garbage'))
        self.assertIsNone(self.sysfs.read_int('garbage', required=False))
        self.assertEqual(1, self.log.output.count(
            os.path.join(self.tree.root, 'garbage')))
        self.assertIn('malformed', self.log.output)

    def test_a_directory_read_as_a_file_is_unreadable_not_fatal(self):
        os.mkdir(os.path.join(self.tree.root, 'directory'))
        self.assertIsNone(self.sysfs.read('directory'))
        self.assertIn('unreadable', self.log.output)

    def test_listing_a_missing_directory_is_empty(self):
        self.assertEqual([], self.sysfs.list('class', 'fpga_region'))
        self.assertEqual(['garbage', 'good'],
                         self.sysfs.list(pattern='g*'))
