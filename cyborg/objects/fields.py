"""Field types of cyborg's versioned objects.

The enumerated fields take their values from ``cyborg.common.vocabulary``,
where the states, statuses and types themselves are named.
"""

from oslo_utils import versionutils
from oslo_versionedobjects import fields

from cyborg.common import vocabulary

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

def _enum(words):
    """An enumeration of ``words.ALL`` whose type bears the name of ``words``
    (an object's fingerprint holds that name)."""
    return type(words.__name__, (fields.Enum,), {})(valid_values=words.ALL)


class DeviceTypeField(fields.BaseEnumField):
    AUTO_TYPE = _enum(vocabulary.DeviceType)


class DeviceStatusField(fields.BaseEnumField):
    AUTO_TYPE = _enum(vocabulary.DeviceStatus)


class HealthField(fields.BaseEnumField):
    AUTO_TYPE = _enum(vocabulary.Health)


# The fields of a device's and a deployable's health and drain (their
# objects' version 1.1), and the version that has them.
HEALTH_AND_DRAIN_VERSION = (1, 1)


def health_and_drain():
    """The health and drain fields, new for each object that has them."""
    return {
        'health': HealthField(default=vocabulary.Health.HEALTHY),
        'health_reason': fields.StringField(nullable=True),
        'health_since': fields.DateTimeField(nullable=True),
        'drain_since': fields.DateTimeField(nullable=True),
    }


def drop_health_and_drain(primitive, target_version):
    """Backport ``primitive`` to ``target_version``: before 1.1 it has no
    health and drain fields."""
    if (versionutils.convert_version_to_tuple(target_version)
            < HEALTH_AND_DRAIN_VERSION):
        for name in health_and_drain():
            primitive.pop(name, None)


class AttachHandleTypeField(fields.BaseEnumField):
    AUTO_TYPE = _enum(vocabulary.AttachHandleType)


class ARQStateField(fields.BaseEnumField):
    AUTO_TYPE = _enum(vocabulary.ARQState)
