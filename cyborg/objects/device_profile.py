"""DeviceProfile: a named request for accelerators, used by Nova flavors."""

from oslo_serialization import jsonutils

from cyborg.db.queries import device_profiles as device_profile_queries
from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class DeviceProfile(base.TableObject):
    """A profile: ``groups`` is a list of request groups (string-to-string maps).

    The groups are stored as JSON text in the ``profile_json`` column.
    """

    # Version 1.0: Initial version
    VERSION = '1.0'

    _queries = device_profile_queries
    _list_query = 'list_device_profiles'

    fields = {
        'id': fields.IntegerField(read_only=True),
        'uuid': fields.UUIDField(),
        'name': fields.StringField(),
        'description': fields.StringField(nullable=True),
        'groups': fields.ListOfDictOfNullableStringsField(),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
    }

    @classmethod
    def _from_result(cls, context, result):
        return cls.from_db(context, result,
                           groups=jsonutils.loads(result.profile_json))

    def _column_values(self, changes):
        values = super()._column_values(changes)
        if 'groups' in values:
            values['profile_json'] = jsonutils.dumps(values.pop('groups'))
        return values

    @classmethod
    def get_by_name(cls, context, name):
        """The device profile called ``name``.

        :raises: cyborg.exception.ResourceNotFound
        """
        return cls._from_result(
            context, device_profile_queries.get_by_name(context, name))
