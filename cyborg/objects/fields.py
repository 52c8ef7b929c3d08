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
