"""Field types of cyborg's versioned objects."""

from oslo_versionedobjects import fields

# Re-exported so object modules import their field types from one place.
BooleanField = fields.BooleanField
DateTimeField = fields.DateTimeField
DictOfStringsField = fields.DictOfStringsField
IntegerField = fields.IntegerField
ListOfDictOfNullableStringsField = fields.ListOfDictOfNullableStringsField
ListOfObjectsField = fields.ListOfObjectsField
ObjectField = fields.ObjectField
StringField = fields.StringField
UUIDField = fields.UUIDField
DictOfNullableStringsField = fields.DictOfNullableStringsField
EnumField = fields.EnumField


class DeviceType(fields.Enum):
    """Kinds of accelerator a device may be."""

    ALL = ('GPU', 'FPGA', 'AICHIP', 'QAT', 'NIC', 'SSD')

    def __init__(self):
        super().__init__(valid_values=self.ALL)


class DeviceTypeField(fields.BaseEnumField):
    AUTO_TYPE = DeviceType()


class DeviceStatus(fields.Enum):
    """Whether a device's accelerators may be allocated.

    A device in ``maintaining`` (disabled) has its whole inventory reserved
    in Placement and takes no new bind.
    """

    ENABLED = 'enabled'
    MAINTAINING = 'maintaining'
    ALL = (ENABLED, MAINTAINING)

    def __init__(self):
        super().__init__(valid_values=self.ALL)


class DeviceStatusField(fields.BaseEnumField):
    AUTO_TYPE = DeviceStatus()


class AttachHandleType(fields.Enum):
    """How Nova attaches a handle: PCI function, mediated device, or fake PCI."""

    PCI = 'PCI'
    MDEV = 'MDEV'
    TEST_PCI = 'TEST_PCI'
    ALL = (PCI, MDEV, TEST_PCI)

    def __init__(self):
        super().__init__(valid_values=self.ALL)


class AttachHandleTypeField(fields.BaseEnumField):
    AUTO_TYPE = AttachHandleType()


class ARQState(fields.Enum):
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
    # An instance whose ARQs are all outside these is resolved
    # (``GET /v2/accelerator_requests?bind_state=resolved`` answers).
    UNRESOLVED = (INITIAL, BIND_STARTED, UNBOUND, UNBIND_FAILED)

    def __init__(self):
        super().__init__(valid_values=self.ALL)


class ARQStateField(fields.BaseEnumField):
    AUTO_TYPE = ARQState()
