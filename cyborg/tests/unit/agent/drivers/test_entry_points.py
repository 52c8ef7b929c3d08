"""Every driver entry point of setup.cfg names a loadable Driver class."""

import configparser
import importlib
import os

import fixtures

from cyborg.agent.drivers import base as driver_base
from cyborg.tests import base

SETUP_CFG = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..',
                         '..', 'setup.cfg')


def driver_entry_points():
    """{name: 'module:Class'} of the cyborg.accelerator.driver namespace."""
    parser = configparser.ConfigParser()
    parser.read(SETUP_CFG)
    lines = parser['entry_points']['cyborg.accelerator.driver'].splitlines()
    return dict((part.strip() for part in line.split('=', 1))
                for line in lines if line.strip())


class TestDriverEntryPoints(base.TestCase):

    def test_every_driver_loads_without_arguments_and_discovers(self):
        entry_points = driver_entry_points()
        self.assertEqual({'fake_driver', 'intel_fpga_driver',
                          'xilinx_fpga_driver', 'nvidia_gpu_driver',
                          'pci_driver'}, set(entry_points))
        empty_root = self.useFixture(fixtures.TempDir()).path
        for group in ('intel_fpga_driver', 'xilinx_fpga_driver',
                      'nvidia_gpu_driver', 'pci_driver'):
            importlib.import_module(
                entry_points[group].split(':')[0])
            self.flags(group=group, sysfs_root=empty_root)
        # Without PCI devices in sysfs the Xilinx driver asks lspci: one
        # that lists nothing (a failing one would fail the discovery).
        self.flags(group='xilinx_fpga_driver', lspci_command='true')
        found = {}
        for name, target in entry_points.items():
            module_name, class_name = target.split(':')
            driver_class = getattr(importlib.import_module(module_name),
                                   class_name)
            driver = driver_class()
            self.assertIsInstance(driver, driver_base.Driver, name)
            found[name] = len(driver.discover())
        # Only the fake driver finds something on a host with an empty sysfs.
        self.assertEqual({'fake_driver': 1, 'intel_fpga_driver': 0,
                          'xilinx_fpga_driver': 0, 'nvidia_gpu_driver': 0,
                          'pci_driver': 0}, found)

    def test_every_driver_module_lists_its_options(self):
        for name, target in driver_entry_points().items():
            module = importlib.import_module(target.split(':')[0])
            if name == 'fake_driver':
                continue
            (group, options), = module.list_opts().items()
            self.assertEqual(name, group.name)
            self.assertIn('sysfs_root', [option.name for option in options])
