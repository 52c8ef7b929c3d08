"""A driver simulating accelerators, for the all-in-one, tests and benchmarks.

It touches no hardware. Without ``[agent] fake_inventory`` it describes one
FPGA; with it, the fleet that YAML or JSON file describes (read by
``fake_inventory``; its format is in etc/cyborg/fake-inventory.yaml and
doc/source/admin/drivers.rst). ``program``
simulates loading a bitstream into a region as the region's ``program`` key
says (``fake_fpga``): it takes that long, gives that outcome, and a
successful one shows at the next discovery (the region's function and,
with a topology, its PFs, VFs and attach handles), and ``loaded`` reads
it back (the key ``loads`` scripts a load that leaves something else).
A card's ``shell_id`` in the file is reported as the shell it has loaded
(``vendor_board_info``). ``prepare`` (at bind
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

import logging
import threading
import time

import yaml

from cyborg.common import vocabulary
from cyborg import conf
from cyborg.agent.drivers import base
from cyborg.agent.drivers import fake_fpga
from cyborg.agent.drivers import fake_inventory
from cyborg.agent.drivers import fake_state

LOG = logging.getLogger(__name__)

# How many program and release calls the driver remembers.
RECORDED = 1000

CONTROLPATH_ID = base.DriverControlpathId(
    cpid_type='PCI',
    cpid_info={'domain': '0000', 'bus': '0c', 'device': '00',
               'function': '0'})
# The region is passed to VMs through its virtual function 1.
ATTACH_INFO = {'domain': '0000', 'bus': '0c', 'device': '00', 'function': '1'}
# A hanging prepare gives up after this many seconds (or at release_hangs).
HANG_SECONDS = 600


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
        # How many discoveries this driver made: a card's scripted faults
        # (``faults`` in the file) are keyed by this count.
        self.reports = 0

    def discover(self):
        """Return the simulated devices, programmed regions as loaded,
        each with the health its entry gives it at this discovery (the
        ``reports``-th).

        :raises: base.DiscoveryFailed naming the bad key or the path when
            the file is missing, unreadable or malformed; the devices of
            the last discovery stay known until it is fixed
        """
        path = self._inventory_path or conf.CONF.agent.fake_inventory
        with self._lock:
            self.reports += 1
            report = self.reports
        if not path:
            devices = [_default_fpga()]
            cards = {_key(CONTROLPATH_ID): _default_card()}
            modes = {}
        else:
            inventory = self._load(path)
            devices = fake_inventory.build_devices(inventory)
            for device, (health, reason) in zip(
                    devices, fake_inventory.health_at(inventory, report),
                    strict=True):
                device.health, device.health_reason = health, reason
            cards = fake_inventory.fpga_cards(inventory)
            modes = {_key(device.controlpath_id): mode
                     for device, mode in zip(
                         devices, fake_inventory.prepare_modes(inventory),
                         strict=False)}
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
            return fake_inventory.load_inventory(path, host)
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
            return base.ProgramOutcome(vocabulary.ProgramResult.INVALID_BITSTREAM,
                                       problem)
        if settings.seconds:
            time.sleep(settings.seconds)
        if settings.result is not vocabulary.ProgramResult.SUCCESS:
            return base.ProgramOutcome(
                settings.result, 'simulated %s programming %s into %s'
                % (settings.result.name, bitstream_path, name))
        state = state.instead(settings.loads)
        with self._lock:
            if state is not None:
                self._loaded[name] = state
                self._card_addresses[name] = _describe(controlpath_id)
                self._save()
            self._bitstreams[key] = bitstream_path
        return base.ProgramOutcome(
            vocabulary.ProgramResult.SUCCESS, 'simulated loading of %s into %s '
            'in %s seconds' % (bitstream_path, name, settings.seconds))

    def loaded(self, controlpath_id, deployable_name=None):
        """What a region of a card of the last discovery holds: its image
        and function id as loaded (``loads`` of its ``program`` key may
        have loaded something else than asked), else the function the
        fleet file gives it.

        :raises: base.ReadbackFailed for a device or region that is not a
            simulated one, and for a region whose ``loads`` is
            ``unreadable``
        """
        with self._lock:
            card = self._cards.get(_key(controlpath_id))
            loaded = dict(self._loaded)
        name, refused = fake_fpga.program_target(
            card, _describe(controlpath_id), deployable_name)
        if refused is not None:
            raise base.ReadbackFailed(refused.message)
        if card.settings[name].loads == 'unreadable':
            raise base.ReadbackFailed('simulated: region %s cannot be read '
                                      'back (loads: unreadable)' % name)
        return fake_fpga.readback(card, name, loaded.get(name))

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


# A control path id as the key of the driver's maps.
_key = fake_inventory.controlpath_key


def _default_fpga():
    """The one FPGA simulated when no inventory file is configured: the card
    and its one region."""
    address = base.pci_address(CONTROLPATH_ID.cpid_info)
    region = base.DriverDeployable(
        name=fake_fpga.region_name(address, 0),
        num_accelerators=1,
        attributes={'rc': 'FPGA', 'trait1': fake_fpga.FAKE_TRAIT},
        attach_handles=[base.DriverAttachHandle(
            attach_type='TEST_PCI', attach_info=dict(ATTACH_INFO),
            in_use=False)])
    return base.DriverDevice(
        type='FPGA', vendor=fake_inventory.VENDOR,
        model=fake_inventory.MODEL, reports_bitstreams=True,
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


def _record(calls, call):
    """Append ``call`` to ``calls``, forgetting the oldest beyond RECORDED."""
    calls.append(call)
    if len(calls) > RECORDED:
        del calls[:len(calls) - RECORDED]
