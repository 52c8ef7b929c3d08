"""Device: one accelerator card on one host (the devices table)."""

from cyborg.db.queries import devices as device_queries
from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class Device(base.TableObject):
    """An accelerator card: its kind, vendor, model, host and status."""

    # Version 1.0: Initial version
    VERSION = '1.0'

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
            default=fields.DeviceStatus.ENABLED),
        'status_reason': fields.StringField(nullable=True),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
    }

    @classmethod
    def get_by_id(cls, context, device_id):
        """The device with the internal ``device_id``.

        :raises: cyborg.exception.ResourceNotFound
        """
        return cls._from_result(context,
                                device_queries.get_by_id(context, device_id))

    @classmethod
    def list_rows(cls, context, filters=None, limit=None, marker=None,
                  sort_key=None, sort_dir=None):
        """The page ``list`` would give, as read-only rows, not objects.

        For lists that only render (GET /v2/devices): a row has the same
        attributes as a Device, without the cost of building one per row.
        Same filters and paging as ``list``; one SQL query.

        :raises: cyborg.exception.InvalidParameterValue on an unknown
            filter, sort key or marker
        """
        return device_queries.list_rows(
            context, filters=filters, limit=limit, marker=marker,
            sort_key=sort_key or 'id', sort_dir=sort_dir or 'asc')
