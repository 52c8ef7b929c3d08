"""Reading the kernel's sysfs for the drivers, tolerating broken entries.

Every file a driver reads goes through ``Sysfs``: a missing, unreadable or
malformed file gives None and one WARNING naming its path, never an
exception. Only a directory the devices are found in that exists but cannot
be listed raises ``base.DiscoveryFailed``: reporting no devices then would
delete them all. PCI functions (``/sys/bus/pci/devices``) are read here too.
"""

import dataclasses
import fnmatch
import logging
import os
import re

from cyborg.agent.drivers import base

LOG = logging.getLogger(__name__)

PCI_DEVICES = os.path.join('bus', 'pci', 'devices')
_VIRTFN = re.compile(r'^virtfn(\d+)$')


class Sysfs:
    """A sysfs tree below ``root`` ('/sys' on a real host)."""

    def __init__(self, root='/sys'):
        self.root = root
        self._warned = set()

    def path(self, *parts):
        """The absolute path of ``parts`` below the root."""
        return os.path.join(self.root, *parts)

    def warn(self, path, reason):
        """Log a WARNING about ``path``, once for the life of this reader."""
        if path in self._warned:
            return
        self._warned.add(path)
        LOG.warning('Ignoring sysfs entry %s: %s', path, reason)

    def exists(self, *parts):
        """Whether ``parts`` exists below the root."""
        return os.path.exists(self.path(*parts))

    def read(self, *parts, required=True):
        """The stripped text of a file, or None.

        A missing file is only worth a warning when ``required``.
        """
        path = self.path(*parts)
        try:
            with open(path, encoding='ascii') as stream:
                return stream.read().strip()
        except FileNotFoundError:
            if required:
                self.warn(path, 'missing')
        except (OSError, UnicodeDecodeError, ValueError) as error:
            self.warn(path, 'unreadable (%s)' % error)
        return None

    def read_int(self, *parts, base=10, required=True):
        """The integer a file holds (``base`` 16 accepts ``0x``), or None."""
        text = self.read(*parts, required=required)
        if text is None:
            return None
        try:
            return int(text, base)
        except ValueError:
            self.warn(self.path(*parts), 'malformed %r' % text[:40])
            return None

    def list(self, *parts, pattern='*', essential=False):
        """Sorted names in a directory matching ``pattern``; [] if absent.

        A directory that exists but cannot be listed gives [] and a warning,
        unless it is ``essential``: one a driver finds its devices in, which
        would otherwise make every device seem gone.

        :raises: base.DiscoveryFailed for an unreadable essential directory
        """
        path = self.path(*parts)
        try:
            names = os.listdir(path)
        except FileNotFoundError:
            return []
        except OSError as error:
            if essential:
                raise base.DiscoveryFailed('cannot list %s: %s'
                                           % (path, error)) from error
            self.warn(path, 'unreadable (%s)' % error)
            return []
        return sorted(name for name in names
                      if fnmatch.fnmatchcase(name, pattern))

    def link_name(self, *parts):
        """The last component of the symlink's target, or None."""
        path = self.path(*parts)
        try:
            return os.path.basename(os.readlink(path))
        except FileNotFoundError:
            return None
        except OSError as error:
            self.warn(path, 'not a readable link (%s)' % error)
            return None

    def real_parts(self, *parts):
        """The components of the resolved path of ``parts``."""
        return os.path.realpath(self.path(*parts)).split(os.sep)


@dataclasses.dataclass
class PCIFunction:
    """The facts of one PCI function that the drivers use."""

    address: str
    vendor_id: int
    product_id: int
    class_code: int
    physfn: str = None
    virtfns: list = dataclasses.field(default_factory=list)

    @property
    def vendor(self):
        """The vendor id as sysfs writes it, e.g. ``0x8086``."""
        return '0x%04x' % self.vendor_id

    @property
    def product(self):
        """The product (device) id as sysfs writes it, e.g. ``0x09c4``."""
        return '0x%04x' % self.product_id


def pci_addresses(sysfs):
    """Addresses of every PCI function in ``/sys/bus/pci/devices``.

    :raises: base.DiscoveryFailed when that directory cannot be listed
    """
    return [name for name in sysfs.list(PCI_DEVICES, essential=True)
            if base.is_pci_address(name)]


def read_pci_function(sysfs, address):
    """The PCIFunction at ``address``, or None when an essential file is bad.

    vendor, device and class are essential; so is sriov_numvfs when present
    (the virtual functions cannot be told otherwise).
    """
    vendor_id = sysfs.read_int(PCI_DEVICES, address, 'vendor', base=16)
    product_id = sysfs.read_int(PCI_DEVICES, address, 'device', base=16)
    class_code = sysfs.read_int(PCI_DEVICES, address, 'class', base=16)
    if vendor_id is None or product_id is None or class_code is None:
        return None
    function = PCIFunction(address=address, vendor_id=vendor_id,
                           product_id=product_id, class_code=class_code)
    physfn = sysfs.link_name(PCI_DEVICES, address, 'physfn')
    if physfn is not None and base.is_pci_address(physfn):
        function.physfn = physfn
    virtfns = _virtual_functions(sysfs, address)
    if virtfns is None:
        return None
    function.virtfns = virtfns
    return function


def _virtual_functions(sysfs, address):
    """Addresses of the enabled VFs in VF order; None if unreadable."""
    if not sysfs.exists(PCI_DEVICES, address, 'sriov_numvfs'):
        return []
    count = sysfs.read_int(PCI_DEVICES, address, 'sriov_numvfs')
    if count is None:
        return None
    links = {}
    for name in sysfs.list(PCI_DEVICES, address, pattern='virtfn*'):
        match = _VIRTFN.match(name)
        if match is None:
            continue
        target = sysfs.link_name(PCI_DEVICES, address, name)
        if target is None or not base.is_pci_address(target):
            sysfs.warn(sysfs.path(PCI_DEVICES, address, name),
                       'not a link to a PCI function')
            continue
        links[int(match.group(1))] = target
    if len(links) != count:
        sysfs.warn(sysfs.path(PCI_DEVICES, address, 'sriov_numvfs'),
                   'says %d VFs, %d virtfn links found' % (count, len(links)))
    return [links[index] for index in sorted(links)]


def pci_functions(sysfs, vendor_id=None):
    """Every readable PCIFunction (of ``vendor_id`` only, when given).

    :raises: base.DiscoveryFailed as ``pci_addresses``
    """
    functions = []
    for address in pci_addresses(sysfs):
        if vendor_id is not None:
            # Read the vendor first: most functions belong to other drivers.
            found = sysfs.read_int(PCI_DEVICES, address, 'vendor', base=16)
            if found != vendor_id:
                continue
        function = read_pci_function(sysfs, address)
        if function is not None:
            functions.append(function)
    return functions
