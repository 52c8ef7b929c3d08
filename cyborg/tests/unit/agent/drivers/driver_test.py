"""Test case of the sysfs drivers: a recorded host and the drivers' log."""

import logging

import fixtures

from cyborg.agent.drivers import base as driver_base
from cyborg.tests import base
from cyborg.tests.unit.agent.drivers import sysfs_tree


class SysfsDriverTestCase(base.TestCase):
    """Gives each test a sysfs tree and the WARNING+ lines drivers log."""

    def setUp(self):
        super().setUp()
        self.log = self.useFixture(fixtures.FakeLogger(
            name='cyborg.agent.drivers', level=logging.WARNING))

    def use_host(self, name):
        """Lay out fixtures/<name>.yaml; return the SysfsTree."""
        return self.useFixture(sysfs_tree.SysfsTree(sysfs_tree.load(name)))

    def use_empty_root(self):
        """A sysfs root with nothing in it at all."""
        return self.useFixture(sysfs_tree.SysfsTree({}))


def pci(address):
    """The cpid/attach info dict of ``address``."""
    domain, bus, rest = address.split(':')
    device, function = rest.split('.')
    return {'domain': domain, 'bus': bus, 'device': device,
            'function': function}


def pci_handle(address, attach_type='PCI', **extra):
    """The attach handle expected for ``address``."""
    info = pci(address)
    info.update(extra)
    return driver_base.DriverAttachHandle(attach_type=attach_type,
                                          attach_info=info)


def pci_controlpath(address):
    """The control path id expected for ``address``."""
    return driver_base.DriverControlpathId(cpid_type='PCI',
                                           cpid_info=pci(address))
