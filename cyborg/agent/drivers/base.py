"""The driver contract: what the agent needs from a vendor driver.

A driver describes its devices with the plain dataclasses below, a tree per
device (seed 000): a device holds deployables, a deployable may hold child
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
* A deployable that offers accelerators has ``num_accelerators`` > 0 and an
  ``rc`` attribute naming its Placement resource class (``FPGA``, ``PGPU``,
  ``VGPU`` or ``CUSTOM_*``); its ``trait*`` attributes (``trait0``,
  ``trait1``, ...) name Placement traits (``CUSTOM_*``). Other attributes
  are free key/value facts; a value that is a dict becomes nested
  attributes (seed 000's parent_attribute_id).
* An attach handle is identified by its type and info within its
  deployable; ``attach_type`` is ``PCI``, ``MDEV`` or ``TEST_PCI`` and
  ``attach_info`` a flat dict of strings.
"""

import abc
import dataclasses
import enum


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
    """One physical accelerator card and the deployables it offers."""

    type: str
    vendor: str
    model: str
    controlpath_id: DriverControlpathId
    std_board_info: dict = dataclasses.field(default_factory=dict)
    vendor_board_info: dict = dataclasses.field(default_factory=dict)
    deployables: list = dataclasses.field(default_factory=list)


def device_to_primitive(device, driver_name):
    """``device`` as the plain dict the agent sends in its inventory report.

    The dict has the DriverDevice fields (nested dataclasses as dicts) and
    ``driver_name``, the entry point name of the driver that found it.
    """
    primitive = dataclasses.asdict(device)
    primitive['driver_name'] = driver_name
    return primitive


class ProgramResult(enum.Enum):
    """Outcome of loading a bitstream."""

    SUCCESS = 'success'
    FAILURE = 'failure'


class Driver(abc.ABC):
    """What the agent needs from a vendor driver."""

    @abc.abstractmethod
    def discover(self):
        """Return this host's devices as a list of DriverDevice."""

    @abc.abstractmethod
    def program(self, controlpath_id, bitstream_path):
        """Load the bitstream file into the device; return a ProgramResult."""
