"""The driver contract: what the agent needs from a vendor driver.

A driver describes its devices with the plain dataclasses below, a tree per
device: a device holds deployables, a deployable may hold child
deployables and the attach handles a VM is given. The agent turns these into
the inventory it reports to the conductor; drivers never see the database.

Rules every driver follows, because the conductor relies on them:

* A device is identified on its host by its ``controlpath_id`` (type and
  info, e.g. its PCI address): the same card must report the same one at
  every discovery.
* A deployable is identified by its ``name`` within its device; names are
  unique on the host (include the device's address, e.g.
  ``fpga-0000:5e:00.0-region0``), stable across discoveries, and made of
  letters, digits, ``-``, ``_``, ``.`` and ``:``.
* A device whose deployables are parts of it (FPGA regions, vGPU types)
  has one root deployable standing for the whole card, named as its parts
  are prefixed (``fpga-0000:5e:00.0``), with the parts as its children
  (``root_deployable``). A device that is itself one accelerator (a whole
  GPU, a Xilinx card, a PCI function) is one deployable, its own root.
* A deployable that offers accelerators has ``num_accelerators`` > 0 and an
  ``rc`` attribute naming its Placement resource class (``FPGA``, ``PGPU``,
  ``VGPU`` or ``CUSTOM_*``); its ``trait*`` attributes (``trait0``,
  ``trait1``, ...) name Placement traits (``CUSTOM_*``). Other attributes
  are free key/value facts; a value that is a dict becomes nested
  attributes (rows linked by parent_attribute_id). A deployable without an
  ``rc`` (a card's root, a physical function) gets no resource provider.
* Virtual functions are deployables too, children of the region or
  physical function they belong to (``vf_deployables``).
  They offer nothing themselves: the attach handles a VM is given stay on
  the deployable with the resource provider, so binding finds them there.
* An attach handle is identified by its type and info within its
  deployable; ``attach_type`` is ``PCI``, ``MDEV`` or ``TEST_PCI`` and
  ``attach_info`` a flat dict of strings.
* A deployable's ``bitstream_id`` attribute, when reported, is the Glance
  image it holds (at most 36 characters); the conductor records it as the
  deployable's ``bitstream_id``. A device whose driver knows what each of
  its deployables holds says so (``reports_bitstreams``); then a
  deployable without the attribute is recorded as holding none.

The helpers below the dataclasses build what these rules ask for: a card's
root deployable, valid trait names (``custom_trait``) and PCI control path
ids and attach handles. ``program`` answers with a ``ProgramOutcome``:
the result code of a programming (``ProgramResult``, a word of
``cyborg.common.vocabulary``) and a message; ``loaded`` then reads back
what the region holds (a ``Readback``), which the agent checks against
what was asked (``readback_problem``) before the programming counts as
done. A driver that can tell which shell a card has loaded reports it as
the ``shell_id`` key of the device's ``vendor_board_info`` (32 hex
digits), so that a partial bitstream needing that shell fits the card.
A bind calls one hook,
``prepare`` (which programs when it is handed a bitstream), and an unbind
or a delete its counterpart, ``release``.
The sysfs reading shared by the hardware drivers is in ``sysfs.py``.
"""

import abc
import dataclasses
import re

from cyborg import bitstream as bitstreams
from cyborg.common import vocabulary

# A Placement trait name: upper case letters, digits and underscores.
_NOT_IN_TRAIT = re.compile('[^A-Z0-9_]+')
TRAIT_MAX_LENGTH = 255
_PCI_ADDRESS = re.compile(
    r'^([0-9a-fA-F]{4}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$')


@dataclasses.dataclass
class DriverControlpathId:
    """How the host addresses a device to manage it (e.g. its PCI function)."""

    cpid_type: str
    cpid_info: dict


@dataclasses.dataclass
class DriverAttachHandle:
    """Something a VM can be given, e.g. a PCI function to pass through."""

    attach_type: str
    attach_info: dict
    in_use: bool = False


@dataclasses.dataclass
class DriverDeployable:
    """A programmable or assignable part of a device (an FPGA region, a GPU)."""

    name: str
    num_accelerators: int
    attributes: dict = dataclasses.field(default_factory=dict)
    attach_handles: list = dataclasses.field(default_factory=list)
    children: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class DriverDevice:
    """One physical accelerator card and the deployables it offers.

    ``reports_bitstreams`` is True when the driver can tell which Glance
    image each deployable holds: a deployable's ``bitstream_id`` attribute
    names it, and a deployable without one holds none (it is blank, e.g.
    after a power cycle), so the conductor clears the image it recorded.
    Left False, a reported ``bitstream_id`` is recorded all the same but
    its absence means "unknown" and the recorded image stays.

    ``health`` is how the card fares at this discovery, a word of
    ``vocabulary.Health``: ``healthy``, ``degraded`` (a transient fault,
    e.g. a non-fatal error count that grew) or ``failed`` (fatal); with
    ``health_reason`` saying why (at most 255 characters are kept). The
    conductor's policy (``cyborg.conductor.health``) decides what it does
    to the device's offer.
    """

    type: str
    vendor: str
    model: str
    controlpath_id: DriverControlpathId
    std_board_info: dict = dataclasses.field(default_factory=dict)
    vendor_board_info: dict = dataclasses.field(default_factory=dict)
    deployables: list = dataclasses.field(default_factory=list)
    reports_bitstreams: bool = False
    health: str = vocabulary.Health.HEALTHY
    health_reason: str | None = None


def device_to_primitive(device, driver_name):
    """``device`` as the plain dict the agent sends in its inventory report.

    The dict has the DriverDevice fields (nested dataclasses as dicts) and
    ``driver_name``, the entry point name of the driver that found it.
    """
    primitive = dataclasses.asdict(device)
    primitive['driver_name'] = driver_name
    return primitive


def root_deployable(name, parts):
    """The deployable standing for a whole card whose ``parts`` (deployables)
    are its children.

    It offers no accelerators and has no ``rc`` or trait attributes, so it
    gets no resource provider: the parts keep theirs.
    """
    return DriverDeployable(name=name, num_accelerators=0,
                            children=list(parts))


def vf_deployables(parent_name, addresses):
    """The deployables of the virtual functions at ``addresses`` (PCI),
    children of the deployable named ``parent_name``: ``<parent>-vf<N>``.

    Each records its ``pci_address``; none offers accelerators, so none gets
    a resource provider.
    """
    return [DriverDeployable(name='%s-vf%d' % (parent_name, index),
                             num_accelerators=0,
                             attributes={'pci_address': address})
            for index, address in enumerate(addresses)]


def custom_trait(*parts):
    """A valid custom Placement trait name: ``CUSTOM_`` and ``parts`` joined.

    Parts are upper-cased; runs of characters a trait cannot hold become one
    ``_``; empty parts are left out; the name is cut at 255 characters.
    """
    words = [_NOT_IN_TRAIT.sub('_', str(part).upper()).strip('_')
             for part in parts if part is not None]
    name = '_'.join(word for word in words if word)
    if name == 'CUSTOM' or name.startswith('CUSTOM_'):
        name = name[len('CUSTOM'):].lstrip('_')
    if not name:
        raise ValueError('no trait name in %r' % (parts,))
    return ('CUSTOM_' + name)[:TRAIT_MAX_LENGTH].rstrip('_')


def trait_attributes(traits):
    """Deployable attributes ``trait0``, ``trait1``, ... naming ``traits``."""
    return {'trait%d' % index: trait for index, trait in enumerate(traits)}


def vendor_name(vendor_id):
    """The name of PCI vendor ``vendor_id`` (an int) for traits, else its id
    in four hex digits."""
    return vocabulary.VENDOR_NAMES.get(vendor_id, '%04X' % vendor_id)


def is_pci_address(text):
    """Whether ``text`` is a full PCI address such as ``0000:5e:00.1``."""
    return bool(_PCI_ADDRESS.match(text or ''))


def pci_address_info(address):
    """``0000:5e:00.1`` as the dict of strings used in control path ids and
    attach handles: domain, bus, device and function (lower case)."""
    match = _PCI_ADDRESS.match(address)
    if match is None:
        raise ValueError('not a PCI address: %r' % (address,))
    domain, bus, device, function = match.groups()
    return {'domain': domain.lower(), 'bus': bus.lower(),
            'device': device.lower(), 'function': function}


def pci_address(info):
    """The address text of a dict made by ``pci_address_info``."""
    return '%(domain)s:%(bus)s:%(device)s.%(function)s' % info


def pci_controlpath_id(address):
    """The control path id of the PCI function at ``address``."""
    return DriverControlpathId(cpid_type='PCI',
                               cpid_info=pci_address_info(address))


def pci_attach_handle(address, attach_type='PCI', **extra):
    """An attach handle for the PCI function at ``address``.

    ``extra`` adds string keys to the attach info (e.g. a mediated device
    type).
    """
    info = pci_address_info(address)
    info.update(extra)
    return DriverAttachHandle(attach_type=attach_type, attach_info=info)


@dataclasses.dataclass(frozen=True)
class ProgramOutcome:
    """What ``Driver.program`` returns: a ``ProgramResult`` and a message for
    the log and the caller (what was loaded where, or why not)."""

    code: vocabulary.ProgramResult
    message: str = ''

    @property
    def succeeded(self):
        """Whether the bitstream was loaded."""
        return self.code is vocabulary.ProgramResult.SUCCESS


def not_programmable(what, controlpath_id):
    """The outcome a driver whose devices (``what``, e.g. ``'GPUs'``) hold no
    FPGA gives when asked to program the device at ``controlpath_id``."""
    return ProgramOutcome(
        vocabulary.ProgramResult.INVALID_DEPLOYABLE,
        '%s cannot be programmed (device %s)'
        % (what, pci_address(controlpath_id.cpid_info)
           if controlpath_id.cpid_type == 'PCI' else controlpath_id))


@dataclasses.dataclass(frozen=True)
class Readback:
    """What a region reports holding after a programming (``loaded``):
    the Glance image id it holds when the device can tell (e.g. the fake
    driver's state), and the id of the function loaded (an Intel AFU id, a
    Xilinx xclbin uuid; any spelling of a uuid), None when unknown."""

    bitstream_id: str | None = None
    function_id: str | None = None

    def as_dict(self):
        """The dict that crosses RPC in the agent's answer."""
        return {'bitstream_id': self.bitstream_id,
                'function_id': self.function_id}

    def describe(self):
        """What the region reports, in words."""
        parts = []
        if self.bitstream_id is not None:
            parts.append('image %s' % self.bitstream_id)
        if self.function_id is not None:
            parts.append('function %s' % self.function_id)
        return ' and '.join(parts) or 'neither an image nor a function id'


def readback_problem(readback, image_id, function_uuid=None):
    """Why ``readback`` does not show image ``image_id`` (whose metadata
    name ``function_uuid``, when known) loaded; None when it does.

    The region's image id decides when it reports one; otherwise its
    function id must be the bitstream's ``function_uuid``. A region
    reporting neither cannot be verified, which fails too.
    """
    if readback.bitstream_id is not None:
        if readback.bitstream_id == image_id:
            return None
    else:
        wanted = bitstreams.hex32(function_uuid)
        if wanted is not None and wanted == bitstreams.hex32(readback.function_id):
            return None
    asked = 'image %s' % image_id
    if function_uuid:
        asked += ' (function %s)' % function_uuid
    return ('verification failed: the region reports %s, not %s'
            % (readback.describe(), asked))


class ReadbackFailed(Exception):
    """A driver could not read what a region holds."""


class PrepareFailed(Exception):
    """A driver could not make an attach handle ready for an instance."""


class ProgramFailed(PrepareFailed):
    """A bind's programming (``Driver.prepare``) did not load its bitstream:
    ``code`` is the programming's ``ProgramResult``."""

    def __init__(self, message, code=vocabulary.ProgramResult.FAILED):
        super().__init__(message)
        self.code = code


class DiscoveryFailed(Exception):
    """This driver cannot tell which devices the host has.

    The agent then skips its inventory report, so that nothing reported
    before is removed, and tries again at the next interval.
    """


class ReleaseFailed(Exception):
    """A driver could not give back what prepare() made for an attach handle."""


class Driver(abc.ABC):
    """What the agent needs from a vendor driver."""

    def prepare(self, device, deployable, attach_handle, request_group, *,
                bitstream_path=None, bitstream=None):
        """Make ``attach_handle`` ready to be given to an instance.

        Called when an ARQ is bound to the handle, with the DriverDevice,
        DriverDeployable and DriverAttachHandle the agent last reported (or
        of a new discovery, when the handle is newer than the report; see
        ``AgentManager``) and the ARQ's device profile group (a dict of
        strings). This is the one hook of a bind, with one failure path:
        whatever must happen before the instance gets the handle (loading
        a bitstream, making a mediated device) happens here, and any
        failure raises PrepareFailed with the reason, which the ARQ shows.
        Returns nothing on success.

        ``bitstream_path`` is a local file holding the bitstream the
        conductor chose for the ARQ's ``accel:bitstream_id`` or
        ``accel:function_id`` (the agent downloaded and verified it), and
        ``bitstream`` its metadata in Glance (``cyborg.bitstream.Bitstream``)
        or None; both are None when nothing is to be loaded. The default
        then programs the deployable (``program``) and accepts the handle.
        A driver overriding ``prepare`` calls it (``super().prepare(...,
        **kwargs)``) before its own work, so that the bitstream is loaded.

        :raises: PrepareFailed with the reason (ProgramFailed when the
            bitstream was not loaded)
        """
        if bitstream_path is None:
            return
        outcome = self.program(device.controlpath_id, bitstream_path,
                               deployable_name=deployable.name,
                               bitstream=bitstream)
        if not outcome.succeeded:
            raise ProgramFailed('programming deployable %s failed (%s): %s'
                                % (deployable.name, outcome.code.name,
                                   outcome.message or 'no message'),
                                outcome.code)

    def release(self, device, deployable, attach_handle):
        """Give back what ``prepare`` made for ``attach_handle``.

        Called at unbind and ARQ delete, after the conductor has freed the
        handle, with the objects of the agent's last report. It must be
        idempotent: releasing what is already gone succeeds quietly. The
        default has nothing to give back (a loaded bitstream stays loaded).

        :raises: ReleaseFailed with the reason
        """
        return None

    @abc.abstractmethod
    def discover(self):
        """Return this host's devices as a list of DriverDevice.

        The list is the driver's whole truth: a device left out is deleted
        by the conductor, with its resource providers. So a driver returns
        [] only when the host has none of its devices; a single device that
        cannot be read may be left out (logged), but when the driver cannot
        tell which devices the host has (its configuration or inventory is
        unusable, the directory listing the devices cannot be read), it
        raises instead. Any other exception is treated the same way.

        :raises: DiscoveryFailed with the reason
        """

    @abc.abstractmethod
    def program(self, controlpath_id, bitstream_path, *,
                deployable_name=None, bitstream=None):
        """Load the bitstream file into an FPGA region; return a
        ProgramOutcome.

        ``controlpath_id`` is the DriverControlpathId of the device, as
        discovered; ``deployable_name`` the name of the deployable (region)
        to program, as discovered, or None for the device's only
        programmable one; ``bitstream_path`` a local file holding the
        bitstream (the agent has fetched it already); ``bitstream``, when
        the caller has it, the image's bitstream metadata
        (``cyborg.bitstream.Bitstream``), which a driver may use to tell
        what the region offers once programmed (function, topology).

        The call is synchronous and bounded in time: it returns once the
        bitstream is loaded or the attempt is over (a driver running a tool
        gives it a configured time limit). The next ``discover`` reports
        the region as programmed.

        Expected failures are outcomes, never exceptions:
        ``INVALID_DEPLOYABLE`` when the device or region is unknown or
        cannot be programmed, ``INVALID_BITSTREAM`` when the file is
        missing or does not fit the region, ``FAILED`` for anything else
        (the tool failed, timed out or is missing), each with a message
        saying why. An exception is a bug; the caller treats it as
        ``FAILED``.
        """

    def loaded(self, controlpath_id, deployable_name=None):
        """Read back what the region ``deployable_name`` of the device at
        ``controlpath_id`` holds now (arguments as for ``program``).

        Called by the agent right after a successful ``program`` (or a
        ``prepare`` handed a bitstream): the device's own word, never what
        was asked, so that a load that left something else in the region
        fails the programming (``readback_problem``). Bounded in time as
        ``program`` is. The default returns None: the driver cannot read
        a region back, and its programming outcome is taken as it is.

        :returns: a Readback, or None (the driver cannot tell)
        :raises: ReadbackFailed with the reason when the device cannot be
            read (any other exception is treated the same way)
        """
        return None
