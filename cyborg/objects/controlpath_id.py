"""ControlpathID: how a host's driver reaches a device (e.g. its PCI address)."""

from cyborg.db.queries import controlpath_ids as controlpath_id_queries
from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class ControlpathID(base.TableObject):
    """A device's control path: a type (e.g. ``PCI``) and its JSON info."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    _queries = controlpath_id_queries
    _list_query = 'list_controlpath_ids'

    fields = {
        'id': fields.IntegerField(read_only=True),
        'uuid': fields.UUIDField(),
        'device_id': fields.IntegerField(),
        'cpid_type': fields.StringField(),
        'cpid_info': fields.StringField(),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
    }
