"""A driver simulating accelerators, for the all-in-one, tests and benchmarks.

It touches no hardware. Without ``[agent] fake_inventory`` it describes one
FPGA; with it, the fleet that YAML or JSON file describes (its format is in
etc/cyborg/fake-inventory.yaml and doc/source/admin/drivers.rst). ``program``
only records which bitstream was loaded where. ``prepare`` (at bind time)
succeeds, fails or hangs as the card's ``prepare`` key in the file says, so
that tests and benchmarks can produce BindFailed and agent time-outs.
"""

import json
import logging
import re
import threading
import uuid

import yaml

from cyborg import conf
from cyborg.agent.drivers import base
from cyborg.agent.drivers.gpu import nvidia

LOG = logging.getLogger(__name__)

VENDOR = '0xABCD'
MODEL = 'fake-fpga'
CONTROLPATH_ID = base.DriverControlpathId(
    cpid_type='PCI',
    cpid_info={'domain': '0000', 'bus': '0c', 'device': '00',
               'function': '0'})
# The region is passed to VMs through its virtual function 1.
ATTACH_INFO = {'domain': '0000', 'bus': '0c', 'device': '00', 'function': '1'}
FAKE_TRAIT = 'CUSTOM_FAKE_DEVICE'
ATTACH_TYPES = ('TEST_PCI', 'PCI')
# Default region ids are name-based uuids in this namespace, so every
# process computes the same ones.
REGION_NAMESPACE = uuid.UUID('0b0a5c1e-3f4e-4c2a-9a55-6f1c2d7e8a90')
# Card k of a host sits on PCI domain k // BUSES_PER_DOMAIN, bus 0x10 + the
# rest; its physical functions are functions of device 00 and its virtual
# functions fill devices 01 to 1f.
BUSES_PER_DOMAIN = 0xf0
MAX_PFS = 8
MAX_VFS = 31 * 8
# vGPU type ids become part of deployable names.
_TYPE_ID = re.compile(r'^[A-Za-z0-9_.:-]+$')
# What ``prepare`` does for the handles of a card.
PREPARE_MODES = ('succeed', 'fail', 'hang')
# A hanging prepare gives up after this many seconds (or at release_hangs).
HANG_SECONDS = 600


class InvalidInventory(ValueError):
    """The fake inventory file does not follow its format."""


class FakeDriver(base.Driver):
    """Simulated FPGAs and GPUs: one FPGA, or the fleet of a file."""

    def __init__(self, inventory_path=None, host=None):
        """Use ``inventory_path`` (default: [agent] fake_inventory) for
        ``host`` (default: [DEFAULT] host)."""
        self._inventory_path = inventory_path
        self._host = host
        self._lock = threading.Lock()
        self._bitstreams = {}
        self._known = {_key(CONTROLPATH_ID)}
        # Control path key -> prepare mode, of the last discovery.
        self._prepare_modes = {}
        self._stop_hanging = threading.Event()

    def discover(self):
        """Return the simulated devices.

        :raises: base.DiscoveryFailed naming the bad key or the path when
            the file is missing, unreadable or malformed; the devices of
            the last discovery stay known until it is fixed
        """
        path = self._inventory_path or conf.CONF.agent.fake_inventory
        modes = []
        if not path:
            devices = [_default_fpga()]
        else:
            host = self._host or conf.CONF.host
            try:
                inventory = load_inventory(path, host)
            except (OSError, ValueError, yaml.YAMLError) as error:
                # ValueError covers InvalidInventory, JSON and text decoding.
                raise base.DiscoveryFailed(
                    'fake inventory %s is unusable: %s' % (path, error)
                ) from error
            devices = build_devices(inventory)
            modes = prepare_modes(inventory)
        with self._lock:
            self._known = {_key(device.controlpath_id) for device in devices}
            self._prepare_modes = {
                _key(device.controlpath_id): mode
                for device, mode in zip(devices, modes, strict=False)}
        return devices

    def prepare(self, device, deployable, attach_handle, request_group):
        """Succeed, fail or hang, as the card's ``prepare`` key says."""
        with self._lock:
            mode = self._prepare_modes.get(_key(device.controlpath_id),
                                           'succeed')
        if mode == 'fail':
            raise base.PrepareFailed(
                'simulated failure of deployable %s (prepare: fail)'
                % deployable.name)
        if mode == 'hang':
            LOG.info('Simulating a hanging prepare of deployable %s',
                     deployable.name)
            self._stop_hanging.wait(HANG_SECONDS)
            raise base.PrepareFailed('simulated hang of deployable %s ended'
                                     % deployable.name)
        super().prepare(device, deployable, attach_handle, request_group)

    def release_hangs(self):
        """End every hanging prepare (they fail), now and from now on."""
        self._stop_hanging.set()

    def program(self, controlpath_id, bitstream_path):
        """Record ``bitstream_path`` as loaded; fail for an unknown device."""
        key = _key(controlpath_id)
        with self._lock:
            if key not in self._known:
                return base.ProgramResult.FAILURE
            self._bitstreams[key] = bitstream_path
        return base.ProgramResult.SUCCESS

    def loaded_bitstream(self, controlpath_id):
        """The bitstream last programmed into ``controlpath_id``, or None."""
        with self._lock:
            return self._bitstreams.get(_key(controlpath_id))


def _key(controlpath_id):
    return (controlpath_id.cpid_type,
            tuple(sorted(controlpath_id.cpid_info.items())))


def _default_fpga():
    """The one FPGA simulated when no inventory file is configured: the card
    and its one region."""
    address = base.pci_address(CONTROLPATH_ID.cpid_info)
    region = base.DriverDeployable(
        name='fpga-%s-region0' % address,
        num_accelerators=1,
        attributes={'rc': 'FPGA', 'trait1': FAKE_TRAIT},
        attach_handles=[base.DriverAttachHandle(
            attach_type='TEST_PCI', attach_info=dict(ATTACH_INFO),
            in_use=False)])
    return base.DriverDevice(
        type='FPGA', vendor=VENDOR, model=MODEL,
        controlpath_id=base.DriverControlpathId(
            cpid_type=CONTROLPATH_ID.cpid_type,
            cpid_info=dict(CONTROLPATH_ID.cpid_info)),
        std_board_info={'device_id': '0xCAFE',
                        'class': 'Processing accelerators'},
        vendor_board_info={'fake_shell': 'fake-shell-1.0'},
        deployables=[base.root_deployable('fpga-%s' % address, [region])])


# The file's format: for each mapping, its keys with (type, default). A
# default of REQUIRED marks a key that must be given.
REQUIRED = object()
# A PCI id: a string such as "0x8086", or the number YAML makes of an
# unquoted 0x8086.
HEX = object()
_VGPU_TYPE_KEYS = {'type': (str, REQUIRED), 'name': (str, REQUIRED),
                   'instances': (int, REQUIRED)}
_REGION_KEYS = {'id': (str, None), 'function_id': (str, None),
                'num_accelerators': (int, None), 'pfs': (int, 1),
                'vfs_per_pf': (int, 0)}
_FPGA_KEYS = {'count': (int, 1), 'vendor': (HEX, VENDOR),
              'vendor_name': (str, None), 'board': (str, 'fake_board'),
              'model': (str, MODEL), 'product_id': (HEX, '0xCAFE'),
              'attach_type': (str, 'TEST_PCI'), 'regions': (list, None),
              'prepare': (str, 'succeed')}
_GPU_KEYS = {'count': (int, 1), 'model': (str, 'fake-gpu'),
             'product_id': (HEX, '0x1eb8'), 'attach_type': (str, 'TEST_PCI'),
             'vgpu_types': (list, []), 'prepare': (str, 'succeed')}
_TOP_KEYS = {'fpgas': (list, []), 'gpus': (list, [])}


def load_inventory(path, host):
    """The validated inventory in the file at ``path``, for ``host``.

    ``{host}`` in any string of the file is replaced by ``host``.

    :raises: OSError, InvalidInventory, yaml.YAMLError
    """
    with open(path, encoding='utf-8') as stream:
        text = stream.read()
    if path.endswith('.json'):
        data = json.loads(text)
    else:
        data = yaml.safe_load(text)
    if data is None:
        data = {}
    return validate_inventory(_substitute_host(data, host))


def _substitute_host(value, host):
    if isinstance(value, str):
        return value.replace('{host}', host)
    if isinstance(value, list):
        return [_substitute_host(item, host) for item in value]
    if isinstance(value, dict):
        return {key: _substitute_host(item, host)
                for key, item in value.items()}
    return value


def validate_inventory(data):
    """``data`` with defaults filled in.

    :raises: InvalidInventory naming the bad key
    """
    inventory = _mapping(data, _TOP_KEYS, 'inventory')
    inventory['fpgas'] = [
        _fpga(entry, 'fpgas[%d]' % index)
        for index, entry in enumerate(inventory['fpgas'])]
    inventory['gpus'] = [
        _gpu(entry, 'gpus[%d]' % index)
        for index, entry in enumerate(inventory['gpus'])]
    return inventory


def _mapping(data, keys, where):
    if not isinstance(data, dict):
        raise InvalidInventory('%s: expected a mapping, got %r'
                               % (where, type(data).__name__))
    for key in data:
        if key not in keys:
            raise InvalidInventory('%s.%s: unknown key (known: %s)'
                                   % (where, key, ', '.join(sorted(keys))))
    values = {}
    for key, (kind, default) in keys.items():
        if key not in data:
            if default is REQUIRED:
                raise InvalidInventory('%s.%s: missing' % (where, key))
            values[key] = default
            continue
        value = data[key]
        if kind is int:
            if isinstance(value, bool) or not isinstance(value, int) \
                    or value < 0:
                raise InvalidInventory(
                    '%s.%s: expected a non-negative integer, got %r'
                    % (where, key, value))
        elif kind is HEX:
            if isinstance(value, int) and not isinstance(value, bool):
                value = '0x%04x' % value
            elif not isinstance(value, str):
                raise InvalidInventory('%s.%s: expected a hex id such as '
                                       '0x8086, got %r' % (where, key, value))
        elif kind is str:
            if isinstance(value, bool) or not isinstance(
                    value, (str, int, float)):
                raise InvalidInventory('%s.%s: expected a string, got %r'
                                       % (where, key, value))
            value = str(value)
        elif not isinstance(value, kind):
            raise InvalidInventory('%s.%s: expected a %s, got %r'
                                   % (where, key, kind.__name__, value))
        values[key] = value
    return values


def _hex_id(value, where):
    try:
        number = int(value, 16)
    except ValueError:
        number = -1
    if not 0 <= number <= 0xffff:
        raise InvalidInventory('%s: expected a 16-bit hex id such as '
                               '0x8086, got %r' % (where, value))
    return number


def _attach_type(value, where):
    if value not in ATTACH_TYPES:
        raise InvalidInventory('%s: expected one of %s, got %r'
                               % (where, ', '.join(ATTACH_TYPES), value))
    return value


def _prepare_mode(value, where):
    if value not in PREPARE_MODES:
        raise InvalidInventory('%s: expected one of %s, got %r'
                               % (where, ', '.join(PREPARE_MODES), value))
    return value


def _fpga(data, where):
    fpga = _mapping(data, _FPGA_KEYS, where)
    _prepare_mode(fpga['prepare'], where + '.prepare')
    fpga['vendor_id'] = _hex_id(fpga['vendor'], where + '.vendor')
    fpga['product_number'] = _hex_id(fpga['product_id'],
                                     where + '.product_id')
    _attach_type(fpga['attach_type'], where + '.attach_type')
    if fpga['regions'] is None:
        fpga['regions'] = [{}]
    fpga['regions'] = [
        _mapping(region, _REGION_KEYS, '%s.regions[%d]' % (where, index))
        for index, region in enumerate(fpga['regions'])]
    pfs = sum(region['pfs'] for region in fpga['regions'])
    vfs = sum(region['pfs'] * region['vfs_per_pf']
              for region in fpga['regions'])
    if pfs > MAX_PFS:
        raise InvalidInventory('%s.regions: %d PFs, at most %d fit a card'
                               % (where, pfs, MAX_PFS))
    if vfs > MAX_VFS:
        raise InvalidInventory('%s.regions: %d VFs, at most %d fit a card'
                               % (where, vfs, MAX_VFS))
    return fpga


def _gpu(data, where):
    gpu = _mapping(data, _GPU_KEYS, where)
    _prepare_mode(gpu['prepare'], where + '.prepare')
    gpu['product_number'] = _hex_id(gpu['product_id'], where + '.product_id')
    _attach_type(gpu['attach_type'], where + '.attach_type')
    gpu['vgpu_types'] = [
        _mapping(entry, _VGPU_TYPE_KEYS, '%s.vgpu_types[%d]' % (where, index))
        for index, entry in enumerate(gpu['vgpu_types'])]
    for index, entry in enumerate(gpu['vgpu_types']):
        if not _TYPE_ID.match(entry['type']):
            raise InvalidInventory(
                '%s.vgpu_types[%d].type: only letters, digits and -_.: are '
                'allowed, got %r' % (where, index, entry['type']))
    return gpu


def build_devices(inventory):
    """The DriverDevice trees of a validated inventory, in file order."""
    devices = []
    slot = 0
    for fpga in inventory['fpgas']:
        for _ in range(fpga['count']):
            devices.append(_fpga_device(fpga, _card_prefix(slot)))
            slot += 1
    for gpu in inventory['gpus']:
        for _ in range(gpu['count']):
            devices.append(_gpu_device(gpu, _card_prefix(slot)))
            slot += 1
    return devices


def prepare_modes(inventory):
    """The ``prepare`` mode of each device ``build_devices`` makes, in order."""
    return [entry['prepare']
            for entry in inventory['fpgas'] + inventory['gpus']
            for _ in range(entry['count'])]


def _card_prefix(slot):
    """``domain:bus:`` of the card in position ``slot`` on its host."""
    domain, bus = divmod(slot, BUSES_PER_DOMAIN)
    return '%04x:%02x:' % (domain, 0x10 + bus)


def _fpga_device(fpga, prefix):
    """The card ``fpga`` at ``prefix``: a root, its regions, their PFs and
    their VFs."""
    address = prefix + '00.0'
    vendor_trait = base.custom_trait(
        'FPGA', fpga['vendor_name'] or base.vendor_name(fpga['vendor_id']))
    regions = []
    pf_number = 0
    vf_number = 0
    for index, region in enumerate(fpga['regions']):
        name = 'fpga-%s-region%d' % (address, index)
        region_id = region['id'] or uuid.uuid5(
            REGION_NAMESPACE, '%s/%s/%d' % (fpga['vendor'], fpga['board'],
                                            index)).hex
        traits = [FAKE_TRAIT, vendor_trait,
                  base.custom_trait('FPGA', 'REGION', region_id)]
        attributes = {'rc': 'FPGA', 'region_id': region_id}
        if region['function_id']:
            traits.append(base.custom_trait('FPGA', 'FUNCTION', 'ID',
                                            region['function_id']))
            attributes['function_id'] = region['function_id']
        attributes.update(base.trait_attributes(traits))
        handles = []
        functions = []
        for _ in range(region['pfs']):
            pf_address = '%s00.%d' % (prefix, pf_number)
            pf_number += 1
            vf_addresses = []
            for _ in range(region['vfs_per_pf']):
                device, function = divmod(vf_number, 8)
                vf_addresses.append('%s%02x.%d' % (prefix, device + 1,
                                                   function))
                vf_number += 1
            pf_name = '%s-pf%d' % (name, len(functions))
            functions.append(base.DriverDeployable(
                name=pf_name, num_accelerators=0,
                attributes={'pci_address': pf_address,
                            'num_vfs': str(len(vf_addresses))},
                children=base.vf_deployables(pf_name, vf_addresses)))
            for handle_address in vf_addresses or [pf_address]:
                handles.append(base.DriverAttachHandle(
                    attach_type=fpga['attach_type'],
                    attach_info=base.pci_address_info(handle_address)))
        num_accelerators = region['num_accelerators']
        if num_accelerators is None:
            num_accelerators = len(handles)
        regions.append(base.DriverDeployable(
            name=name, num_accelerators=num_accelerators,
            attributes=attributes, attach_handles=handles,
            children=functions))
    return base.DriverDevice(
        type='FPGA', vendor=fpga['vendor'], model=fpga['model'],
        controlpath_id=base.pci_controlpath_id(address),
        std_board_info={'device_id': fpga['product_id'],
                        'class': 'Processing accelerators'},
        vendor_board_info={'board': fpga['board']},
        deployables=[base.root_deployable('fpga-%s' % address, regions)])


def _gpu_device(gpu, prefix):
    """The GPU ``gpu`` at ``prefix``: a root and its vGPU types, or one
    PGPU deployable."""
    address = prefix + '00.0'
    product = gpu['product_number']
    if gpu['vgpu_types']:
        deployables = [nvidia.gpu_root(address, [
            nvidia.vgpu_deployable(address, product, entry['type'],
                                   entry['name'], entry['instances'],
                                   extra_traits=[FAKE_TRAIT])
            for entry in gpu['vgpu_types']])]
    else:
        deployables = [nvidia.pgpu_deployable(
            address, product, gpu['attach_type'], extra_traits=[FAKE_TRAIT])]
    return nvidia.gpu_device(address, product, gpu['model'], deployables)
