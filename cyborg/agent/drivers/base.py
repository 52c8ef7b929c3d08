"""The driver contract: what the agent needs from a vendor driver.

A driver describes its devices with the plain dataclasses below, a tree per
device (seed 000): a device holds deployables, a deployable may hold child
deployables and the attach handles a VM is given. The agent turns these into
the inventory it reports to the conductor; drivers never see the database.
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
