"""Device: one accelerator card on one host (the devices table)."""

from cyborg.common import vocabulary
from cyborg import exception
from cyborg.db.queries import devices as device_queries
from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class Device(base.TableObject):
    """An accelerator card: its kind, vendor, model, host and status."""

    # Version 1.0: Initial version
    # Version 1.1: health, health_reason, health_since and drain_since
    VERSION = '1.1'

    _queries = device_queries
    _list_query = 'list_devices'

    fields = {
        'id': fields.IntegerField(read_only=True),
        'uuid': fields.UUIDField(),
        'type': fields.DeviceTypeField(),
        'vendor': fields.StringField(),
        'model': fields.StringField(),
        # JSON text, passed through to the API as a string.
        'std_board_info': fields.StringField(nullable=True),
        'vendor_board_info': fields.StringField(nullable=True),
        'hostname': fields.StringField(),
        'status': fields.DeviceStatusField(
            default=vocabulary.DeviceStatus.ENABLED),
        'status_reason': fields.StringField(nullable=True),
        **fields.health_and_drain(),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
    }

    def obj_make_compatible(self, primitive, target_version):
        """Backport to ``target_version``: 1.0 has no health or drain."""
        super().obj_make_compatible(primitive, target_version)
        fields.drop_health_and_drain(primitive, target_version)

    @classmethod
    def get_row(cls, context, uuid):
        """The device with ``uuid`` as the row ``list_rows`` would give it
        (with its derived drain state). One SQL statement.

        :raises: cyborg.exception.ResourceNotFound
        """
        found = device_queries.list_rows(context, filters={'uuid': uuid},
                                         limit=1)
        if not found:
            raise exception.ResourceNotFound(resource='Device', key='uuid',
                                             value=uuid)
        return found[0]

    @classmethod
    def get_by_id(cls, context, device_id):
        """The device with the internal ``device_id``.

        :raises: cyborg.exception.ResourceNotFound
        """
        return cls._from_result(context,
                                device_queries.get_by_id(context, device_id))
