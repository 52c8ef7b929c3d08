"""Field types of cyborg's versioned objects.

The enumerated fields take their values from ``cyborg.common.vocabulary``,
where the states, statuses and types themselves are named.
"""

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


class AttachHandleTypeField(fields.BaseEnumField):
    AUTO_TYPE = _enum(vocabulary.AttachHandleType)


class ARQStateField(fields.BaseEnumField):
    AUTO_TYPE = _enum(vocabulary.ARQState)
