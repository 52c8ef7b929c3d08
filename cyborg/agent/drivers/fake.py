"""A driver simulating accelerators, for the all-in-one, tests and benchmarks.

It touches no hardware. Without ``[agent] fake_inventory`` it describes one
FPGA; with it, the fleet that YAML or JSON file describes (its format is in
etc/cyborg/fake-inventory.yaml and doc/source/admin/drivers.rst). ``program``
simulates loading a bitstream into a region as the region's ``program`` key
says (``fake_fpga``): it takes that long, gives that outcome, and a
successful one shows at the next discovery (the region's function and,
with a topology, its PFs, VFs and attach handles). ``prepare`` (at bind
time) succeeds, fails or hangs as the card's ``prepare`` key in the file
says, so that tests and benchmarks can produce BindFailed and agent
time-outs; handed a bitstream, it programs as ``program`` does first (the
base class's ``prepare``). What the regions hold survives a restart of the
agent, as a real card keeps its bitstream until it is powered off: it is
kept in a file of the state path (``fake_state``), whose removal is the
simulation's power cycle. The FPGAs say so to the conductor
(``reports_bitstreams``): a region reporting no ``bitstream_id`` holds
none. The driver records the last RECORDED
``program`` and ``release`` calls (``programs``, ``releases``) for tests
to count: a long-running all-in-one must not keep every one.
"""

import json
import logging
import math
import re
import threading
import time

import yaml

from cyborg import bitstream_topology
from cyborg import conf
from cyborg.agent.drivers import base
from cyborg.agent.drivers import fake_fpga
from cyborg.agent.drivers import fake_state
from cyborg.agent.drivers.gpu import nvidia

LOG = logging.getLogger(__name__)

# How many program and release calls the driver remembers.
RECORDED = 1000

VENDOR = '0xABCD'
MODEL = 'fake-fpga'
CONTROLPATH_ID = base.DriverControlpathId(
    cpid_type='PCI',
    cpid_info={'domain': '0000', 'bus': '0c', 'device': '00',
               'function': '0'})
# The region is passed to VMs through its virtual function 1.
ATTACH_INFO = {'domain': '0000', 'bus': '0c', 'device': '00', 'function': '1'}
FAKE_TRAIT = fake_fpga.FAKE_TRAIT
ATTACH_TYPES = ('TEST_PCI', 'PCI')
# Card k of a host sits on PCI domain k // BUSES_PER_DOMAIN, bus 0x10 + the
# rest; its physical functions are functions of device 00 and its virtual
# functions fill devices 01 to 1f.
BUSES_PER_DOMAIN = 0xf0
MAX_PFS = fake_fpga.MAX_PFS
MAX_VFS = fake_fpga.MAX_VFS
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

    def __init__(self, inventory_path=None, host=None, state_path=None):
        """Use ``inventory_path`` (default: [agent] fake_inventory) for
        ``host`` (default: [DEFAULT] host); what the regions hold is kept
        in a file of ``state_path`` (default: [DEFAULT] state_path) and
        read from it now."""
        self._inventory_path = inventory_path
        self._host = host
        self._lock = threading.Lock()
        # Control path key -> the last bitstream programmed into the card.
        self._bitstreams = {}
        # Control path key -> FakeCard, of the last discovery.
        self._cards = {_key(CONTROLPATH_ID): _default_card()}
        # Region name -> fake_fpga.Loaded, of successful programming, and
        # region name -> the PCI address of its card.
        self._loaded = {}
        self._card_addresses = {}
        self._state = fake_state.StateFile(
            state_path or conf.CONF.state_path, host or conf.CONF.host)
        self._restore()
        # Control path key -> prepare mode, of the last discovery.
        self._prepare_modes = {}
        self._stop_hanging = threading.Event()
        # The last RECORDED program calls, as (region name or None,
        # bitstream image id or None), and releases, as (deployable name,
        # attach info): what tests and benchmarks count.
        self.programs = []
        self.releases = []

    def discover(self):
        """Return the simulated devices, programmed regions as loaded.

        :raises: base.DiscoveryFailed naming the bad key or the path when
            the file is missing, unreadable or malformed; the devices of
            the last discovery stay known until it is fixed
        """
        path = self._inventory_path or conf.CONF.agent.fake_inventory
        if not path:
            devices = [_default_fpga()]
            cards = {_key(CONTROLPATH_ID): _default_card()}
            modes = {}
        else:
            inventory = self._load(path)
            devices = build_devices(inventory)
            cards = fpga_cards(inventory)
            modes = {_key(device.controlpath_id): mode for device, mode in
                     zip(devices, prepare_modes(inventory), strict=False)}
        with self._lock:
            self._cards = cards
            self._prepare_modes = modes
            if self._loaded:
                names = {name for card in cards.values()
                         for name in card.settings}
                self._loaded = {name: loaded for name, loaded
                                in self._loaded.items() if name in names}
                self._card_addresses = {
                    name: address for name, address
                    in self._card_addresses.items() if name in self._loaded}
            loaded = dict(self._loaded)
        if loaded:
            for device in devices:
                card = cards.get(_key(device.controlpath_id))
                if card is not None:
                    fake_fpga.show_loaded(device, card, loaded)
        return devices

    def _load(self, path):
        """The inventory of the file at ``path`` for this host.

        :raises: base.DiscoveryFailed
        """
        host = self._host or conf.CONF.host
        try:
            return load_inventory(path, host)
        except (OSError, ValueError, yaml.YAMLError) as error:
            # ValueError covers InvalidInventory, JSON and text decoding.
            raise base.DiscoveryFailed(
                'fake inventory %s is unusable: %s' % (path, error)
            ) from error

    def prepare(self, device, deployable, attach_handle, request_group,
                **kwargs):
        """Succeed, fail or hang, as the card's ``prepare`` key says; the
        base class programs first when handed a bitstream."""
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
        super().prepare(device, deployable, attach_handle, request_group,
                        **kwargs)

    def release(self, device, deployable, attach_handle):
        """Record the release: nothing simulated needs giving back."""
        with self._lock:
            _record(self.releases, (deployable.name,
                                    dict(attach_handle.attach_info)))

    def release_hangs(self):
        """End every hanging prepare (they fail), now and from now on."""
        self._stop_hanging.set()

    def program(self, controlpath_id, bitstream_path, *,
                deployable_name=None, bitstream=None):
        """Simulate loading ``bitstream_path`` into a region of a card of
        the last discovery, as the region's ``program`` key says.

        The file is not read. INVALID_DEPLOYABLE for a device that is not a
        simulated FPGA or a name that is not one of its regions (or no name
        when it has several), INVALID_BITSTREAM when the topology does not
        fit the card; otherwise, after the region's ``seconds``, its
        ``result``. A success shows at the next discovery; a failure leaves
        the region as it was.
        """
        key = _key(controlpath_id)
        with self._lock:
            card = self._cards.get(key)
            loaded = dict(self._loaded)
            _record(self.programs, (deployable_name,
                                    getattr(bitstream, 'image_id', None)))
        name, refused = fake_fpga.program_target(
            card, _describe(controlpath_id), deployable_name)
        if refused is not None:
            return refused
        settings = card.settings[name]
        state = fake_fpga.Loaded.of(bitstream_path, bitstream, settings)
        problem = fake_fpga.fit_problem(card, name, state, loaded)
        if problem is not None:
            return base.ProgramOutcome(base.ProgramResult.INVALID_BITSTREAM,
                                       problem)
        if settings.seconds:
            time.sleep(settings.seconds)
        if settings.result is not base.ProgramResult.SUCCESS:
            return base.ProgramOutcome(
                settings.result, 'simulated %s programming %s into %s'
                % (settings.result.name, bitstream_path, name))
        with self._lock:
            self._loaded[name] = state
            self._card_addresses[name] = _describe(controlpath_id)
            self._bitstreams[key] = bitstream_path
            self._save()
        return base.ProgramOutcome(
            base.ProgramResult.SUCCESS, 'simulated loading of %s into %s '
            'in %s seconds' % (bitstream_path, name, settings.seconds))

    def _restore(self):
        """Take what the state file says the regions hold (at the start)."""
        for (address, name), state in self._state.read().items():
            self._loaded[name] = state
            self._card_addresses[name] = address
            if base.is_pci_address(address):
                self._bitstreams[_key(base.pci_controlpath_id(address))] = \
                    state.bitstream_path

    def _save(self):
        """Write what the regions hold to the state file (lock held)."""
        self._state.write({(self._card_addresses[name], name): state
                           for name, state in self._loaded.items()})

    def loaded_bitstream(self, controlpath_id, deployable_name=None):
        """The bitstream last programmed into ``controlpath_id`` (into its
        region ``deployable_name``, when given), or None."""
        key = _key(controlpath_id)
        with self._lock:
            if deployable_name is None:
                return self._bitstreams.get(key)
            card = self._cards.get(key)
            loaded = self._loaded.get(deployable_name)
        if card is None or loaded is None or \
                deployable_name not in card.settings:
            return None
        return loaded.bitstream_path


def _describe(controlpath_id):
    """A control path id for a message: its PCI address when it has one."""
    try:
        return base.pci_address(controlpath_id.cpid_info)
    except (AttributeError, KeyError, TypeError):
        return repr(controlpath_id)


def _key(controlpath_id):
    return (controlpath_id.cpid_type,
            tuple(sorted(controlpath_id.cpid_info.items())))


def _default_fpga():
    """The one FPGA simulated when no inventory file is configured: the card
    and its one region."""
    address = base.pci_address(CONTROLPATH_ID.cpid_info)
    region = base.DriverDeployable(
        name=fake_fpga.region_name(address, 0),
        num_accelerators=1,
        attributes={'rc': 'FPGA', 'trait1': FAKE_TRAIT},
        attach_handles=[base.DriverAttachHandle(
            attach_type='TEST_PCI', attach_info=dict(ATTACH_INFO),
            in_use=False)])
    return base.DriverDevice(
        type='FPGA', vendor=VENDOR, model=MODEL, reports_bitstreams=True,
        controlpath_id=base.DriverControlpathId(
            cpid_type=CONTROLPATH_ID.cpid_type,
            cpid_info=dict(CONTROLPATH_ID.cpid_info)),
        std_board_info={'device_id': '0xCAFE',
                        'class': 'Processing accelerators'},
        vendor_board_info={'fake_shell': 'fake-shell-1.0'},
        deployables=[base.root_deployable('fpga-%s' % address, [region])])


def _default_card():
    """The FakeCard of the FPGA simulated without an inventory file."""
    address = base.pci_address(CONTROLPATH_ID.cpid_info)
    return fake_fpga.FakeCard(
        build=_default_fpga, attach_type='TEST_PCI',
        settings={fake_fpga.region_name(address, 0):
                  fake_fpga.DEFAULT_SETTINGS})


# The file's format: for each mapping, its keys with (type, default). A
# default of REQUIRED marks a key that must be given.
REQUIRED = object()
# A PCI id: a string such as "0x8086", or the number YAML makes of an
# unquoted 0x8086.
HEX = object()
# A non-negative int or float.
NUMBER = object()
_PROGRAM_KEYS = {'seconds': (NUMBER, 0), 'result': (str, 'success'),
                 'topology_after': (dict, None)}
_VGPU_TYPE_KEYS = {'type': (str, REQUIRED), 'name': (str, REQUIRED),
                   'instances': (int, REQUIRED)}
_REGION_KEYS = {'id': (str, None), 'function_id': (str, None),
                'num_accelerators': (int, None), 'pfs': (int, 1),
                'vfs_per_pf': (int, 0), 'program': (dict, None)}
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
        _region(region, '%s.regions[%d]' % (where, index))
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
                              topology_after=topology)


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
            devices.append(fake_fpga.fpga_device(fpga, _card_prefix(slot)))
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


def fpga_cards(inventory):
    """The FakeCard of each FPGA ``build_devices`` makes, by control path
    key."""
    cards = {}
    slot = 0
    for fpga in inventory['fpgas']:
        for _ in range(fpga['count']):
            prefix = _card_prefix(slot)
            controlpath_id = base.pci_controlpath_id(
                fake_fpga.pf_address(prefix, 0))
            cards[_key(controlpath_id)] = fake_fpga.card(fpga, prefix)
            slot += 1
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


def _record(calls, call):
    """Append ``call`` to ``calls``, forgetting the oldest beyond RECORDED."""
    calls.append(call)
    if len(calls) > RECORDED:
        del calls[:len(calls) - RECORDED]
