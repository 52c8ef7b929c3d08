"""The fake driver's FPGA cards: built from the fleet file, and programmed.

A simulated card sits on one PCI bus: its physical functions are the
functions of device 00 (``pf_address``) and its virtual functions fill
devices 01 to 1f, or follow the function its fleet entry's ``first_vf``
names (``vf_address``). ``fpga_device`` builds a card entry of
the fleet file into its DriverDevice tree: a root, its regions, their PF
deployables and, below each PF, its VF deployables. A region's functions
are a layout, a list of (PF address, [VF addresses]); ``functions`` turns
it into the PF deployables and the attach handles of the region, for the
regions the file describes and for those rebuilt after programming alike.

Programming is simulated per region, as the region's
``program`` key in the fleet file says (``Settings``): how many seconds it
takes, which of the programming outcomes it gives, the topology (the
PFs and VFs) the region shows afterwards when the bitstream's metadata give
none, and what a successful load really leaves in the region (``loads``:
what was asked, nothing new, another function, or something that cannot
be read back), so that tests can drive the agent's verification
(``readback``). A region successfully programmed holds a ``Loaded``; ``apply`` makes
a freshly built card show it: the bitstream and function ids as the
region's attributes and function trait and, with a topology, new PF and VF
deployables and attach handles on PCI functions the card's other regions
do not use. The other regions are left as they are. The driver keeps a
``FakeCard`` per card of its last discovery to check a programming request
(``program_target``, ``fit_problem``) and show what was loaded
(``show_loaded``).
"""

import dataclasses
import functools
import logging
import uuid

from cyborg.agent.drivers import base
from cyborg.common import vocabulary

LOG = logging.getLogger(__name__)

# The trait of every simulated device.
FAKE_TRAIT = 'CUSTOM_FAKE_DEVICE'
# Default region ids are name-based uuids in this namespace, so every
# process computes the same ones.
REGION_NAMESPACE = uuid.UUID('0b0a5c1e-3f4e-4c2a-9a55-6f1c2d7e8a90')
# Functions of device 00 hold the PFs; devices 01 to 1f the VFs.
FUNCTIONS_PER_DEVICE = 8
MAX_PFS = FUNCTIONS_PER_DEVICE
MAX_VFS = 0x1f * FUNCTIONS_PER_DEVICE
# The function (device * 8 + function) of a card's first VF, unless its
# fleet entry says otherwise: 01.0, after the PFs of device 00.
FIRST_VF = FUNCTIONS_PER_DEVICE
# Functions a card has: devices 00 to 1f.
FUNCTIONS_PER_CARD = 0x20 * FUNCTIONS_PER_DEVICE
# A simulated programming takes at most this many seconds.
MAX_SECONDS = 600
# The programming outcomes by the names the fleet file uses.
RESULTS = {
    'success': vocabulary.ProgramResult.SUCCESS,
    'failed': vocabulary.ProgramResult.FAILED,
    'invalid_deployable': vocabulary.ProgramResult.INVALID_DEPLOYABLE,
    'invalid_bitstream': vocabulary.ProgramResult.INVALID_BITSTREAM,
}
FUNCTION_TRAIT_PREFIX = base.custom_trait('FPGA', 'FUNCTION', 'ID') + '_'
# What a load reported successful leaves in the region, by the names the
# fleet file uses: what was asked; nothing new (the region keeps what it
# held); a function nobody asked for (OTHER_FUNCTION_ID, no image id); or
# what was asked, but the region cannot be read back.
LOADS = ('asked', 'nothing', 'other', 'unreadable')
OTHER_FUNCTION_ID = uuid.uuid5(REGION_NAMESPACE, 'other function').hex


class NoRoom(ValueError):
    """A topology needs more PCI functions than the card has free."""


@dataclasses.dataclass(frozen=True)
class Settings:
    """How programming a region goes: its ``program`` key in the file.

    ``topology_after`` is a ``cyborg.bitstream_topology.Topology`` or None;
    ``loads`` one of LOADS.
    """

    seconds: float = 0
    result: vocabulary.ProgramResult = vocabulary.ProgramResult.SUCCESS
    topology_after: object = None
    loads: str = 'asked'


DEFAULT_SETTINGS = Settings()


@dataclasses.dataclass(frozen=True)
class Loaded:
    """What a successfully programmed region holds: the file, the ids its
    metadata give (the function id as 32 lower-case hex digits, like the
    fleet file's ``function_id``) and the topology it shows, if any."""

    bitstream_path: str
    bitstream_id: str | None = None
    function_id: str | None = None
    function_name: str | None = None
    topology: object = None

    @classmethod
    def of(cls, bitstream_path, metadata, settings):
        """What loading ``bitstream_path`` with ``metadata`` (a
        ``cyborg.bitstream.Bitstream`` or None) into a region of
        ``settings`` leaves: the metadata's topology, else the settings'
        ``topology_after``; a topology without PFs changes nothing."""
        topology = getattr(metadata, 'topology', None) or \
            settings.topology_after
        if topology is not None and not topology.pfs:
            topology = None
        if metadata is None:
            return cls(bitstream_path=bitstream_path, topology=topology)
        function_id = metadata.function_uuid
        if function_id:
            function_id = function_id.replace('-', '').lower()
        return cls(bitstream_path=bitstream_path,
                   bitstream_id=metadata.image_id, function_id=function_id,
                   function_name=metadata.function_name, topology=topology)

    def instead(self, loads):
        """What the region holds after this load, as ``loads`` (one of
        LOADS) says, or None when it keeps what it held."""
        if loads == 'nothing':
            return None
        if loads == 'other':
            return Loaded(bitstream_path=self.bitstream_path,
                          function_id=OTHER_FUNCTION_ID,
                          function_name='other')
        return self

    def attributes(self):
        """The region attributes this load sets (those it knows)."""
        values = {'bitstream_id': self.bitstream_id,
                  'function_id': self.function_id,
                  'function_name': self.function_name}
        return {key: value for key, value in values.items()
                if value is not None}


@dataclasses.dataclass(frozen=True)
class FakeCard:
    """A simulated FPGA of the driver's last discovery, as programming
    needs it: ``build()`` makes its DriverDevice as the file describes it,
    with handles of ``attach_type``; ``settings`` maps its regions' names,
    in order, to their Settings."""

    build: object
    attach_type: str
    settings: dict


def pf_address(prefix, number):
    """The address of PF ``number`` of the card at ``prefix``
    (``domain:bus:``)."""
    return '%s00.%d' % (prefix, number)


def vf_address(prefix, number, first=FIRST_VF):
    """The address of VF ``number`` of the card at ``prefix``: from PCI
    function ``first`` on (counted over devices, eight functions each; by
    default 01.0), up to device 1f."""
    device, function = divmod(first + number, FUNCTIONS_PER_DEVICE)
    return '%s%02x.%d' % (prefix, device, function)


def region_name(address, index):
    """The name of region ``index`` of the card whose first PF is at
    ``address``."""
    return 'fpga-%s-region%d' % (address, index)


def card(fpga, prefix):
    """The FakeCard of the validated fleet entry ``fpga`` at ``prefix``."""
    address = pf_address(prefix, 0)
    return FakeCard(
        build=functools.partial(fpga_device, fpga, prefix),
        attach_type=fpga['attach_type'],
        settings={region_name(address, index): region['program']
                  for index, region in enumerate(fpga['regions'])})


def readback(fake_card, name, loaded):
    """The ``base.Readback`` of region ``name`` of ``fake_card`` holding
    ``loaded`` (a Loaded, or None: what the fleet file describes)."""
    if loaded is not None:
        return base.Readback(bitstream_id=loaded.bitstream_id,
                             function_id=loaded.function_id)
    region = _region(fake_card.build(), name)
    return base.Readback(function_id=region.attributes.get('function_id'))


def fpga_device(fpga, prefix):
    """The card of the validated fleet entry ``fpga`` at ``prefix``
    (``domain:bus:``): a root, its regions, their PFs and their VFs.

    The regions' PFs take the card's PFs in file order, and their VFs its
    VFs, so each function has its own address.
    """
    address = pf_address(prefix, 0)
    vendor_trait = base.custom_trait(
        'FPGA', fpga['vendor_name'] or base.vendor_name(fpga['vendor_id']))
    regions = []
    pf_number = 0
    vf_number = 0
    for index, region in enumerate(fpga['regions']):
        layout = []
        for _ in range(region['pfs']):
            count = region['vfs_per_pf']
            layout.append((pf_address(prefix, pf_number),
                           [vf_address(prefix, vf_number + number,
                                       fpga.get('first_vf', FIRST_VF))
                            for number in range(count)]))
            pf_number += 1
            vf_number += count
        regions.append(_region_deployable(fpga, index, address, vendor_trait,
                                          layout))
    vendor_board_info = {'board': fpga['board']}
    if fpga.get('shell_id'):
        vendor_board_info['shell_id'] = fpga['shell_id']
    return base.DriverDevice(
        type='FPGA', vendor=fpga['vendor'], model=fpga['model'],
        reports_bitstreams=True,
        controlpath_id=base.pci_controlpath_id(address),
        std_board_info={'device_id': fpga['product_id'],
                        'class': 'Processing accelerators'},
        vendor_board_info=vendor_board_info,
        deployables=[base.root_deployable('fpga-%s' % address, regions)])


def _region_deployable(fpga, index, address, vendor_trait, layout):
    """Region ``index`` of card ``fpga``, its functions at ``layout``."""
    region = fpga['regions'][index]
    name = region_name(address, index)
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
    children, handles = functions(name, layout, fpga['attach_type'])
    num_accelerators = region['num_accelerators']
    if num_accelerators is None:
        num_accelerators = len(handles)
    return base.DriverDeployable(
        name=name, num_accelerators=num_accelerators, attributes=attributes,
        attach_handles=handles, children=children)


def functions(name, layout, attach_type, topology=None):
    """The PF deployables and attach handles of the region named ``name``.

    ``layout`` lists (PF address, [VF addresses]). Each PF is a deployable
    ``<region>-pf<n>`` (attributes ``pci_address``, ``num_vfs``) with a
    deployable per VF below it; the region gets an ``attach_type`` handle
    per VF, or per PF without VFs. With ``topology`` (whose PFs and VFs
    match the layout) the deployables also carry the names it gives
    (``topology_name``) and a PF its non-empty ``capability`` and ``kpi``.

    :returns: (PF deployables, attach handles)
    """
    deployables = []
    handles = []
    for index, (pf, vfs) in enumerate(layout):
        pf_name = '%s-pf%d' % (name, index)
        attributes = {'pci_address': pf, 'num_vfs': str(len(vfs))}
        children = base.vf_deployables(pf_name, vfs)
        if topology is not None:
            _name_functions(attributes, children, topology.pfs[index])
        deployables.append(base.DriverDeployable(
            name=pf_name, num_accelerators=0, attributes=attributes,
            children=children))
        handles.extend(base.DriverAttachHandle(
            attach_type=attach_type,
            attach_info=base.pci_address_info(address))
            for address in vfs or [pf])
    return deployables, handles


def _name_functions(attributes, vf_deployables, spec):
    """Add what topology PF ``spec`` says of a PF and its VFs."""
    attributes['topology_name'] = spec.name
    for key in ('capability', 'kpi'):
        if getattr(spec, key):
            attributes[key] = getattr(spec, key)
    for deployable, vf in zip(vf_deployables, spec.vfs, strict=True):
        deployable.attributes['topology_name'] = vf.name


def apply(device, region_name, loaded, attach_type):
    """Make ``device`` (a freshly built card) show ``loaded`` in its region
    ``region_name``; its other regions are left alone.

    :raises: KeyError when the card has no such region; NoRoom when the
        topology needs more PCI functions than the other regions leave
        free (the function is shown all the same)
    """
    region = _region(device, region_name)
    _show_function(region, loaded)
    if loaded.topology is not None:
        layout = _free_layout(device, region, loaded.topology)
        children, handles = functions(region.name, layout, attach_type,
                                      loaded.topology)
        region.children = children
        region.attach_handles = handles
        region.num_accelerators = len(handles)


def _region(device, region_name):
    for root in device.deployables:
        for region in root.children:
            if region.name == region_name:
                return region
    raise KeyError(region_name)


def _show_function(region, loaded):
    """Set the region's bitstream and function attributes and replace its
    function trait by the loaded function's."""
    region.attributes.update(loaded.attributes())
    if loaded.function_id is None:
        return
    for key, value in list(region.attributes.items()):
        if key.startswith('trait') and \
                value.startswith(FUNCTION_TRAIT_PREFIX):
            del region.attributes[key]
    numbers = [int(key[len('trait'):]) for key in region.attributes
               if key.startswith('trait') and key[len('trait'):].isdigit()]
    next_key = 'trait%d' % (max(numbers, default=-1) + 1)
    region.attributes[next_key] = base.custom_trait(
        'FPGA', 'FUNCTION', 'ID', loaded.function_id)


def _free_layout(device, region, topology):
    """A layout for ``topology`` on the PCI functions of ``device`` that no
    deployable but ``region`` (and those below it) uses, lowest first.

    :raises: NoRoom
    """
    used = set()
    for root in device.deployables:
        _collect_addresses(root, region, used)
    prefix = '%(domain)s:%(bus)s:' % device.controlpath_id.cpid_info
    pfs = [address for address in (pf_address(prefix, number)
                                   for number in range(MAX_PFS))
           if address not in used]
    vfs = [address for address in (vf_address(prefix, number)
                                   for number in range(MAX_VFS))
           if address not in used]
    if topology.pf_num > len(pfs) or topology.vf_num > len(vfs):
        raise NoRoom(
            'topology of %d PFs and %d VFs does not fit region %s: the card '
            'has %d PFs and %d VFs free' % (topology.pf_num, topology.vf_num,
                                            region.name, len(pfs), len(vfs)))
    free_vfs = iter(vfs)
    return [(pf, [next(free_vfs) for _ in spec.vfs])
            for pf, spec in zip(pfs, topology.pfs, strict=False)]


def _collect_addresses(deployable, skip, used):
    """Add to ``used`` the PCI functions of ``deployable``'s subtree, but
    not those of ``skip``'s."""
    if deployable is skip:
        return
    address = deployable.attributes.get('pci_address')
    if address:
        used.add(address)
    for handle in deployable.attach_handles:
        try:
            used.add(base.pci_address(handle.attach_info))
        except KeyError:
            continue
    for child in deployable.children:
        _collect_addresses(child, skip, used)


# The driver's side --------------------------------------------------------

def program_target(fake_card, where, deployable_name):
    """The name of the region of ``fake_card`` (None: no simulated FPGA at
    ``where``, a PCI address for messages) to program, or the outcome
    refusing: INVALID_DEPLOYABLE when ``deployable_name`` is not one of its
    regions, or is None and the card has not exactly one.

    :returns: (name, None) or (None, outcome)
    """
    def refuse(message):
        return None, base.ProgramOutcome(
            vocabulary.ProgramResult.INVALID_DEPLOYABLE, message)

    if fake_card is None:
        return refuse('no simulated FPGA has control path %s' % where)
    names = list(fake_card.settings)
    if deployable_name is None:
        if len(names) != 1:
            return refuse('the FPGA at %s has %d regions (%s): name one'
                          % (where, len(names), ', '.join(names)))
        return names[0], None
    if deployable_name not in fake_card.settings:
        return refuse('%s is not a region of the FPGA at %s'
                      % (deployable_name, where))
    return deployable_name, None


def fit_problem(fake_card, name, loaded, others):
    """Why ``loaded`` cannot be shown in region ``name`` of ``fake_card``
    whose regions hold ``others`` (region name -> Loaded), or None."""
    if loaded.topology is None:
        return None
    device = fake_card.build()
    show_loaded(device, fake_card, {other: value for other, value
                                    in others.items() if other != name})
    try:
        apply(device, name, loaded, fake_card.attach_type)
    except NoRoom as error:
        return str(error)
    return None


def show_loaded(device, fake_card, loaded):
    """Make the regions of ``device`` (built for ``fake_card``) show what
    ``loaded`` (region name -> Loaded) says they hold; a topology that no
    longer fits the card (the file changed) is logged and left out."""
    for name in fake_card.settings:
        if name not in loaded:
            continue
        try:
            apply(device, name, loaded[name], fake_card.attach_type)
        except NoRoom as error:
            LOG.warning('Region %s shows its functions as the inventory '
                        'describes them: %s', name, error)
