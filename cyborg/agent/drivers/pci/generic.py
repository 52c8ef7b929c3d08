"""PCI functions the operator lists for passthrough ([pci_driver]).

``passthrough_whitelist`` is a JSON list of specs like Nova's device_spec:
``{"vendor_id": "8086", "product_id": "0d5c", "address": "0000:5e:00.*"}``;
each key is optional and may hold ``*`` and ``?`` wildcards. Every PCI
function matching a spec is one device with one deployable (rc CUSTOM_PCI)
and one PCI attach handle. An invalid list fails the discovery
(``base.DiscoveryFailed``), so that the agent keeps what it reported before.
Each function's health is read from the growth of its PCIe AER counters,
as the NVIDIA driver does (``cyborg.agent.drivers.aer``).
"""

import fnmatch
import json

from cyborg import conf
from cyborg.agent.drivers import aer
from cyborg.agent.drivers import base
from cyborg.agent.drivers import sysfs as sysfs_reader
from cyborg.conf import drivers as driver_opts

SPEC_KEYS = ('vendor_id', 'product_id', 'address', 'device_type')
DEVICE_TYPES = ('GPU', 'FPGA', 'AICHIP', 'QAT', 'NIC', 'SSD')

# Declared in cyborg.conf.drivers; registered when the agent loads this.
group = driver_opts.pci_group
opts = driver_opts.pci_opts
driver_opts.register_opts(conf.CONF, group)


def list_opts():
    """The options of this driver, for the sample configuration."""
    return {group: opts}


class InvalidWhitelist(ValueError):
    """[pci_driver] passthrough_whitelist does not follow its format."""


def parse_whitelist(text):
    """The specs of ``text``, keys lower-cased and defaults filled in.

    :raises: InvalidWhitelist naming the bad entry or key
    """
    try:
        specs = json.loads(text or '[]')
    except ValueError as error:
        raise InvalidWhitelist('not JSON: %s' % error)
    if isinstance(specs, dict):
        specs = [specs]
    if not isinstance(specs, list):
        raise InvalidWhitelist('expected a list of mappings')
    parsed = []
    for index, spec in enumerate(specs):
        where = 'passthrough_whitelist[%d]' % index
        if not isinstance(spec, dict):
            raise InvalidWhitelist('%s: expected a mapping' % where)
        for key, value in spec.items():
            if key not in SPEC_KEYS:
                raise InvalidWhitelist('%s.%s: unknown key (known: %s)'
                                       % (where, key, ', '.join(SPEC_KEYS)))
            if not isinstance(value, str):
                raise InvalidWhitelist('%s.%s: expected a string' %
                                       (where, key))
        entry = {key: spec.get(key, '*').lower() for key in SPEC_KEYS[:3]}
        for key in ('vendor_id', 'product_id'):
            if entry[key].startswith('0x'):
                entry[key] = entry[key][2:]
        entry['device_type'] = spec.get('device_type', 'AICHIP').upper()
        if entry['device_type'] not in DEVICE_TYPES:
            raise InvalidWhitelist('%s.device_type: expected one of %s'
                                   % (where, ', '.join(DEVICE_TYPES)))
        parsed.append(entry)
    return parsed


def matching_spec(specs, function):
    """The first spec ``function`` (a sysfs PCIFunction) matches, or None."""
    facts = {'vendor_id': '%04x' % function.vendor_id,
             'product_id': '%04x' % function.product_id,
             'address': function.address.lower()}
    for spec in specs:
        if all(fnmatch.fnmatchcase(facts[key], spec[key])
               for key in facts):
            return spec
    return None


def pci_device(function, device_type):
    """The DriverDevice offering the PCI function ``function`` whole."""
    vendor = base.vendor_name(function.vendor_id)
    product = '%04X' % function.product_id
    attributes = {'rc': 'CUSTOM_PCI'}
    attributes.update(base.trait_attributes([
        base.custom_trait('PCI', vendor),
        base.custom_trait('PCI', 'PRODUCT', 'ID', product)]))
    deployable = base.DriverDeployable(
        name='pci-%s' % function.address, num_accelerators=1,
        attributes=attributes,
        attach_handles=[base.pci_attach_handle(function.address)])
    return base.DriverDevice(
        type=device_type, vendor=function.vendor, model=function.product,
        controlpath_id=base.pci_controlpath_id(function.address),
        std_board_info={'product_id': function.product,
                        'class': '0x%06x' % function.class_code},
        deployables=[deployable])


class GenericPCIDriver(base.Driver):
    """Whitelisted PCI functions, each passed through whole."""

    def __init__(self, sysfs_root=None):
        root = sysfs_root or conf.CONF.pci_driver.sysfs_root
        self._sysfs = sysfs_reader.Sysfs(root)
        self._aer = aer.AerTracker(self._sysfs)

    def discover(self):
        """Return a device per whitelisted function.

        :raises: base.DiscoveryFailed when the whitelist is invalid (a
            configuration error: reporting nothing would delete the devices
            offered so far) or the PCI devices cannot be listed
        """
        try:
            specs = parse_whitelist(conf.CONF.pci_driver.passthrough_whitelist)
        except InvalidWhitelist as error:
            raise base.DiscoveryFailed(
                '[pci_driver] passthrough_whitelist is invalid: %s'
                % error) from error
        if not specs:
            return []
        devices = []
        for address in sysfs_reader.pci_addresses(self._sysfs):
            function = sysfs_reader.read_pci_function(self._sysfs, address)
            if function is None:
                continue
            spec = matching_spec(specs, function)
            if spec is not None:
                device = pci_device(function, spec['device_type'])
                device.health, device.health_reason = self._aer.health(
                    address)
                devices.append(device)
        self._aer.forget_others(
            base.pci_address(device.controlpath_id.cpid_info)
            for device in devices)
        return devices

    def program(self, controlpath_id, bitstream_path, *,
                deployable_name=None, bitstream=None):
        """Plain PCI functions are not programmable: INVALID_DEPLOYABLE."""
        return base.not_programmable('Plain PCI functions', controlpath_id)
