"""The wire and flavor vocabulary: the words cyborg, Nova and the drivers share.

The states of an accelerator request with their named sets, the statuses
and types of a device and of an attach handle, the result codes of a
programming, the request group keys that ask for one and the names of PCI
vendors in traits. Every layer reads them here; the database builds its
CHECK constraints and the versioned objects their enumerated fields from
these classes.
"""

import enum


class DeviceType:
    """Kinds of accelerator a device may be."""

    ALL = ('GPU', 'FPGA', 'AICHIP', 'QAT', 'NIC', 'SSD')


class DeviceStatus:
    """Whether a device's accelerators may be allocated.

    A device in ``maintaining`` (disabled) has its whole inventory reserved
    in Placement and takes no new bind.
    """

    ENABLED = 'enabled'
    MAINTAINING = 'maintaining'
    ALL = (ENABLED, MAINTAINING)


class Health:
    """How a device or deployable is faring, as its driver reports it.

    ``degraded`` is a transient fault: the device is out of Placement's
    offer until enough healthy reports in a row bring it back (``[health]
    recovery_reports``). ``failed`` is fatal: it stays out until an
    operator clears it. Bound ARQs keep what they hold in both.
    """

    HEALTHY = 'healthy'
    DEGRADED = 'degraded'
    FAILED = 'failed'
    ALL = (HEALTHY, DEGRADED, FAILED)


class DrainState:
    """Where the drain of a device or deployable stands (never stored).

    ``draining``: an operator asked that no new bind land on it and an ARQ
    still holds one of its attach handles; ``drained``: asked, and none
    holds one any more. Not drained at all reads as null.
    """

    DRAINING = 'draining'
    DRAINED = 'drained'
    ALL = (DRAINING, DRAINED)


class AttachHandleType:
    """How Nova attaches a handle: PCI function, mediated device, or fake PCI."""

    PCI = 'PCI'
    MDEV = 'MDEV'
    TEST_PCI = 'TEST_PCI'
    ALL = (PCI, MDEV, TEST_PCI)


class ARQState:
    """States of an accelerator request (see the bind/unbind state table)."""

    INITIAL = 'Initial'
    BIND_STARTED = 'BindStarted'
    BOUND = 'Bound'
    BIND_FAILED = 'BindFailed'
    UNBOUND = 'Unbound'
    UNBIND_FAILED = 'UnbindFailed'
    DELETING = 'Deleting'
    ALL = (INITIAL, BIND_STARTED, BOUND, BIND_FAILED, UNBOUND, UNBIND_FAILED,
           DELETING)

    # The named sets of states; nothing else spells them.
    # A bind may start from these.
    BIND_FROM = (INITIAL, UNBOUND)
    # An unbind may start from these.
    UNBIND_FROM = (INITIAL, BIND_STARTED, BOUND, BIND_FAILED)
    # An ARQ in these holds its deployable and attach handle (and its
    # instance counts as having ARQs bound).
    HOLDING = (BIND_STARTED, BOUND)
    # The states of an ARQ whose bind was recorded: under way, or ended.
    BIND_RECORDED = (BIND_STARTED, BOUND, BIND_FAILED)
    # An instance whose ARQs are all outside these is resolved
    # (``GET /v2/accelerator_requests?bind_state=resolved`` answers).
    UNRESOLVED = (INITIAL, BIND_STARTED, UNBOUND, UNBIND_FAILED)


class ProgramResult(enum.IntEnum):
    """The result codes of programming an FPGA.

    The agent answers a programming request with the integer, as the
    programming service's ``int program_fpga_with_bitstream(deployable_uuid,
    bitstream_uuid)`` does.
    """

    SUCCESS = 0
    # Failed with an unknown error: the tool failed, timed out, is missing.
    FAILED = 1
    # The target FPGA or region is not found (or cannot be programmed).
    INVALID_DEPLOYABLE = 2
    # The bitstream cannot be used: no such file, or it does not fit.
    INVALID_BITSTREAM = 3
    # The name used before these codes: the same member as FAILED.
    FAILURE = 1


# Request group keys (device profiles) that ask for an FPGA to be programmed
# when an ARQ is bound (cyborg.conductor.bind_programming resolves them).
PROGRAMMING_KEYS = ('accel:bitstream_id', 'accel:function_id')

# Names used in vendor traits (CUSTOM_FPGA_INTEL, CUSTOM_PCI_NVIDIA), by
# PCI vendor id; other vendors are named by their id.
VENDOR_NAMES = {
    0x8086: 'INTEL', 0x10ee: 'XILINX', 0x10de: 'NVIDIA', 0x1bd4: 'INSPUR',
    0x15b3: 'MELLANOX', 0x1002: 'AMD', 0x19e5: 'HUAWEI', 0x1af4: 'REDHAT',
    0xabcd: 'FAKE',
}


class HistoryEvent:
    """What an entry of a device's or deployable's history records.

    An open vocabulary: a later kind is added here (and to ``ALL``), and
    the database takes any of these words (no CHECK constraint, so that a
    new kind needs no migration).
    """

    # A region was programmed with an image (a program call).
    PROGRAM = 'program'
    # An ARQ's bind ended on the deployable: Bound (ok) or BindFailed.
    BIND = 'bind'
    # An ARQ holding the deployable was unbound.
    UNBIND = 'unbind'
    # An ARQ holding the deployable was deleted.
    DELETE = 'delete'
    # The device was enabled or disabled (put in maintenance).
    ENABLE = 'enable'
    DISABLE = 'disable'
    # An operator drained the device or deployable (no new bind lands on
    # it), or undrained it.
    DRAIN = 'drain'
    UNDRAIN = 'undrain'
    # The health of the device or deployable changed as its agent's report
    # or a failed verification said (the entry's reason says why), or an
    # operator cleared it (healthy again).
    HEALTH = 'health'
    CLEAR_HEALTH = 'clear_health'
    ALL = (PROGRAM, BIND, UNBIND, DELETE, ENABLE, DISABLE, DRAIN, UNDRAIN,
           HEALTH, CLEAR_HEALTH)


class HistoryOutcome:
    """How the change an entry records ended."""

    OK = 'ok'
    FAILED = 'failed'
    ALL = (OK, FAILED)
