"""The fake driver's inventory file: read, checked, and made devices.

``[agent] fake_inventory`` names a YAML or JSON file describing the fleet
the fake driver simulates (its format is in etc/cyborg/fake-inventory.yaml
and doc/source/admin/drivers.rst). This module reads it for a host, checks
every key with defaults filled in (``InvalidInventory`` names the bad one)
and builds the devices, the FPGA cards and the ``prepare`` modes it
describes, card after card on their own PCI buses, and the health each
card reports at a given discovery (its ``health`` key and its scripted
``faults``, ``health_at``).
"""

import json
import math
import re

import yaml

from cyborg import bitstream as bitstreams
from cyborg import bitstream_topology
from cyborg.common import vocabulary
from cyborg.agent.drivers import base
from cyborg.agent.drivers import fake_fpga
from cyborg.agent.drivers.gpu import nvidia

# The card of an inventory entry that does not say otherwise.
VENDOR = '0xABCD'
MODEL = 'fake-fpga'
FAKE_TRAIT = fake_fpga.FAKE_TRAIT
ATTACH_TYPES = ('TEST_PCI', 'PCI')
# Card k of a host sits on PCI domain k // BUSES_PER_DOMAIN, bus 0x10 + the
# rest, unless its entry names a bus; its physical functions are functions
# of device 00 and its virtual functions fill devices 01 to 1f, or follow
# the entry's first_vf.
BUSES_PER_DOMAIN = 0xf0
# An entry's ``bus``: "0c" or "0000:0c" (domain 0000 when not given).
_BUS = re.compile(r'^(?:([0-9a-fA-F]{4}):)?([0-9a-fA-F]{2})$')
# An entry's ``first_vf``: device.function, such as "00.1".
_FUNCTION = re.compile(r'^([0-9a-fA-F]{2})\.([0-7])$')
MAX_PFS = fake_fpga.MAX_PFS
MAX_VFS = fake_fpga.MAX_VFS
# vGPU type ids become part of deployable names.
_TYPE_ID = re.compile(r'^[A-Za-z0-9_.:-]+$')
# What ``prepare`` does for the handles of a card.
PREPARE_MODES = ('succeed', 'fail', 'hang')
HEALTHS = vocabulary.Health.ALL


class InvalidInventory(ValueError):
    """The fake inventory file does not follow its format."""


def controlpath_key(controlpath_id):
    """A control path id as a hashable key: its type and sorted info."""
    return (controlpath_id.cpid_type,
            tuple(sorted(controlpath_id.cpid_info.items())))


# The file's format: for each mapping, its keys with (type, default). A
# default of REQUIRED marks a key that must be given.
REQUIRED = object()
# A PCI id: a string such as "0x8086", or the number YAML makes of an
# unquoted 0x8086.
HEX = object()
# A non-negative int or float.
NUMBER = object()
_PROGRAM_KEYS = {'seconds': (NUMBER, 0), 'result': (str, 'success'),
                 'topology_after': (dict, None), 'loads': (str, 'asked')}
# A scripted fault of every card of an entry: from its ``at_report``-th
# discovery (counted from 1) it reports ``health`` with ``reason``, until
# its ``recover_at``-th (None: for good).
_FAULT_KEYS = {'at_report': (int, REQUIRED), 'health': (str, REQUIRED),
               'reason': (str, None), 'recover_at': (int, None)}
# The health keys of an FPGA or GPU entry: what its cards report outside
# their faults (a test may rewrite the file: it is read at every discovery).
_HEALTH_KEYS = {'health': (str, 'healthy'), 'health_reason': (str, None),
                'faults': (list, [])}
_VGPU_TYPE_KEYS = {'type': (str, REQUIRED), 'name': (str, REQUIRED),
                   'instances': (int, REQUIRED)}
_REGION_KEYS = {'id': (str, None), 'function_id': (str, None),
                'num_accelerators': (int, None), 'pfs': (int, 1),
                'vfs_per_pf': (int, 0), 'program': (dict, None)}
_FPGA_KEYS = {'count': (int, 1), 'vendor': (HEX, VENDOR),
              'vendor_name': (str, None), 'board': (str, 'fake_board'),
              'model': (str, MODEL), 'product_id': (HEX, '0xCAFE'),
              'attach_type': (str, 'TEST_PCI'), 'regions': (list, None),
              'prepare': (str, 'succeed'), 'shell_id': (str, None),
              'bus': (str, None), 'first_vf': (str, None)}
_GPU_KEYS = {'count': (int, 1), 'model': (str, 'fake-gpu'),
             'product_id': (HEX, '0x1eb8'), 'attach_type': (str, 'TEST_PCI'),
             'vgpu_types': (list, []), 'prepare': (str, 'succeed')}
# Cards of both kinds report a health.
_FPGA_KEYS.update(_HEALTH_KEYS)
_GPU_KEYS.update(_HEALTH_KEYS)
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
    """The values of mapping ``data`` for ``keys`` (defaults filled in).

    :raises: InvalidInventory naming an unknown, missing or bad key
    """
    if not isinstance(data, dict):
        raise InvalidInventory('%s: expected a mapping, got %r'
                               % (where, type(data).__name__))
    for key in data:
        if key not in keys:
            raise InvalidInventory('%s.%s: unknown key (known: %s)'
                                   % (where, key, ', '.join(sorted(keys))))
    values = {}
    for key, (kind, default) in keys.items():
        if key in data:
            values[key] = _value(kind, data[key], '%s.%s' % (where, key))
        elif default is REQUIRED:
            raise InvalidInventory('%s.%s: missing' % (where, key))
        else:
            values[key] = default
    return values


def _value(kind, value, where):
    """``value`` checked against ``kind`` (and converted for HEX and str).

    :raises: InvalidInventory
    """
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int) \
                or value < 0:
            raise InvalidInventory('%s: expected a non-negative integer, '
                                   'got %r' % (where, value))
    elif kind is NUMBER:
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value < 0:
            raise InvalidInventory('%s: expected a non-negative number, '
                                   'got %r' % (where, value))
    elif kind is HEX:
        if isinstance(value, int) and not isinstance(value, bool):
            value = '0x%04x' % value
        elif not isinstance(value, str):
            raise InvalidInventory('%s: expected a hex id such as 0x8086, '
                                   'got %r' % (where, value))
    elif kind is str:
        if isinstance(value, bool) or not isinstance(
                value, (str, int, float)):
            raise InvalidInventory('%s: expected a string, got %r'
                                   % (where, value))
        value = str(value)
    elif not isinstance(value, kind):
        raise InvalidInventory('%s: expected a %s, got %r'
                               % (where, kind.__name__, value))
    return value


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


def _health(entry, where):
    """Check the health keys of a validated FPGA or GPU ``entry``.

    :raises: InvalidInventory
    """
    _health_word(entry['health'], where + '.health')
    faults = []
    for index, data in enumerate(entry['faults']):
        at = '%s.faults[%d]' % (where, index)
        fault = _mapping(data, _FAULT_KEYS, at)
        _health_word(fault['health'], at + '.health')
        if fault['at_report'] < 1:
            raise InvalidInventory('%s.at_report: reports are counted from '
                                   '1, got %r' % (at, fault['at_report']))
        if fault['recover_at'] is not None and \
                fault['recover_at'] <= fault['at_report']:
            raise InvalidInventory('%s.recover_at: must come after '
                                   'at_report (%d), got %r'
                                   % (at, fault['at_report'],
                                      fault['recover_at']))
        faults.append(fault)
    entry['faults'] = faults


def _health_word(value, where):
    if value not in HEALTHS:
        raise InvalidInventory('%s: expected one of %s, got %r'
                               % (where, ', '.join(HEALTHS), value))


def _fpga(data, where):
    fpga = _mapping(data, _FPGA_KEYS, where)
    _prepare_mode(fpga['prepare'], where + '.prepare')
    _health(fpga, where)
    fpga['vendor_id'] = _hex_id(fpga['vendor'], where + '.vendor')
    fpga['product_number'] = _hex_id(fpga['product_id'],
                                     where + '.product_id')
    _attach_type(fpga['attach_type'], where + '.attach_type')
    if fpga['shell_id'] is not None:
        shell = bitstreams.hex32(fpga['shell_id'])
        if shell is None:
            raise InvalidInventory('%s.shell_id: expected a uuid, got %r'
                                   % (where, fpga['shell_id']))
        fpga['shell_id'] = shell
    if fpga['regions'] is None:
        fpga['regions'] = [{}]
    fpga['regions'] = [
        _region(region, '%s.regions[%d]' % (where, index))
        for index, region in enumerate(fpga['regions'])]
    pfs = sum(region['pfs'] for region in fpga['regions'])
    vfs = sum(region['pfs'] * region['vfs_per_pf']
              for region in fpga['regions'])
    if pfs > MAX_PFS:
        raise InvalidInventory('%s.regions: %d PFs, at most %d fit a card'
                               % (where, pfs, MAX_PFS))
    fpga['bus'] = _bus(fpga['bus'], fpga['count'], where + '.bus')
    fpga['first_vf'] = _first_vf(fpga['first_vf'], pfs, where + '.first_vf')
    room = fake_fpga.FUNCTIONS_PER_CARD - fpga['first_vf']
    if vfs > min(MAX_VFS, room):
        raise InvalidInventory('%s.regions: %d VFs, at most %d fit a card'
                               % (where, vfs, min(MAX_VFS, room)))
    return fpga


def _bus(value, count, where):
    """The (domain, bus) numbers of the first card of an entry, or None
    (the cards take the next free slots)."""
    if value is None:
        return None
    match = _BUS.match(value)
    if match is None:
        raise InvalidInventory('%s: expected "bb" or "dddd:bb" in hex, got '
                               '%r' % (where, value))
    domain, bus = int(match.group(1) or '0', 16), int(match.group(2), 16)
    if bus + count > 0x100:
        raise InvalidInventory('%s: %d cards from bus %02x pass bus ff'
                               % (where, count, bus))
    return domain, bus


def _first_vf(value, pfs, where):
    """The function number (device * 8 + function) of a card's first VF."""
    if value is None:
        return fake_fpga.FIRST_VF
    match = _FUNCTION.match(value)
    if match is None:
        raise InvalidInventory('%s: expected "dd.f" (device in hex, function '
                               '0-7), got %r' % (where, value))
    number = (int(match.group(1), 16) * fake_fpga.FUNCTIONS_PER_DEVICE
              + int(match.group(2)))
    if number < pfs or number >= fake_fpga.FUNCTIONS_PER_CARD:
        raise InvalidInventory('%s: %s is taken by the card\'s %d PF(s) or '
                               'past device 1f' % (where, value, pfs))
    return number


def _region(data, where):
    region = _mapping(data, _REGION_KEYS, where)
    region['program'] = _program_settings(region['program'],
                                          where + '.program')
    return region


def _program_settings(data, where):
    """The fake_fpga.Settings of a region's ``program`` key (None: the
    defaults, an instant success)."""
    if data is None:
        return fake_fpga.DEFAULT_SETTINGS
    values = _mapping(data, _PROGRAM_KEYS, where)
    if values['seconds'] > fake_fpga.MAX_SECONDS:
        raise InvalidInventory('%s.seconds: at most %d, got %r'
                               % (where, fake_fpga.MAX_SECONDS,
                                  values['seconds']))
    if values['loads'] not in fake_fpga.LOADS:
        raise InvalidInventory('%s.loads: expected one of %s, got %r'
                               % (where, ', '.join(fake_fpga.LOADS),
                                  values['loads']))
    result = fake_fpga.RESULTS.get(values['result'])
    if result is None:
        raise InvalidInventory('%s.result: expected one of %s, got %r'
                               % (where, ', '.join(fake_fpga.RESULTS),
                                  values['result']))
    topology = None
    if values['topology_after'] is not None:
        try:
            topology = bitstream_topology.parse_topology(
                values['topology_after'])
        except bitstream_topology.TopologyError as error:
            raise InvalidInventory('%s.topology_after: %s' % (where, error))
        if topology.pf_num > MAX_PFS or topology.vf_num > MAX_VFS:
            raise InvalidInventory(
                '%s.topology_after: %d PFs and %d VFs, at most %d and %d '
                'fit a card' % (where, topology.pf_num, topology.vf_num,
                                MAX_PFS, MAX_VFS))
    return fake_fpga.Settings(seconds=values['seconds'], result=result,
                              topology_after=topology, loads=values['loads'])


def _gpu(data, where):
    gpu = _mapping(data, _GPU_KEYS, where)
    _prepare_mode(gpu['prepare'], where + '.prepare')
    _health(gpu, where)
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
    devices = [fake_fpga.fpga_device(fpga, prefix)
               for fpga, prefix in _fpga_prefixes(inventory)]
    slot = sum(fpga['count'] for fpga in inventory['fpgas'])
    for gpu in inventory['gpus']:
        for _ in range(gpu['count']):
            devices.append(_gpu_device(gpu, _card_prefix(slot)))
            slot += 1
    return devices


def _fpga_prefixes(inventory):
    """(entry, ``domain:bus:``) of each FPGA card, in file order: the next
    slot's bus, or the bus its entry names (then the following buses)."""
    slot = 0
    for fpga in inventory['fpgas']:
        for number in range(fpga['count']):
            if fpga['bus'] is None:
                yield fpga, _card_prefix(slot)
            else:
                domain, bus = fpga['bus']
                yield fpga, '%04x:%02x:' % (domain, bus + number)
            slot += 1


def prepare_modes(inventory):
    """The ``prepare`` mode of each device ``build_devices`` makes, in order."""
    return [entry['prepare']
            for entry in inventory['fpgas'] + inventory['gpus']
            for _ in range(entry['count'])]


def health_at(inventory, report):
    """The (health, reason) of each device ``build_devices`` makes, in
    order, at the ``report``-th discovery (counted from 1).

    A fault whose ``at_report`` has come and whose ``recover_at`` has not
    decides (the last such one of the entry's list); otherwise the entry's
    ``health`` and ``health_reason``.
    """
    healths = []
    for entry in inventory['fpgas'] + inventory['gpus']:
        health = (entry['health'], entry['health_reason'])
        for fault in entry['faults']:
            if fault['at_report'] <= report and (
                    fault['recover_at'] is None
                    or report < fault['recover_at']):
                health = (fault['health'], fault['reason'])
        healths.extend([health] * entry['count'])
    return healths


def fpga_cards(inventory):
    """The FakeCard of each FPGA ``build_devices`` makes, by control path
    key."""
    cards = {}
    for fpga, prefix in _fpga_prefixes(inventory):
        controlpath_id = base.pci_controlpath_id(
            fake_fpga.pf_address(prefix, 0))
        cards[controlpath_key(controlpath_id)] = fake_fpga.card(fpga, prefix)
    return cards


def _card_prefix(slot):
    """``domain:bus:`` of the card in position ``slot`` on its host."""
    domain, bus = divmod(slot, BUSES_PER_DOMAIN)
    return '%04x:%02x:' % (domain, 0x10 + bus)


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
