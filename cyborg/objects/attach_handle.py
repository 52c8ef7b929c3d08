"""AttachHandle: what Nova attaches to an instance (PCI function or mdev)."""

from cyborg.db.queries import attach_handles as attach_handle_queries
from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class AttachHandle(base.TableObject):
    """One attachable unit of a deployable and whether an ARQ holds it."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    _queries = attach_handle_queries
    _list_query = 'list_attach_handles'

    fields = {
        'id': fields.IntegerField(read_only=True),
        'uuid': fields.UUIDField(),
        'deployable_id': fields.IntegerField(),
        'cpid_id': fields.IntegerField(),
        'attach_type': fields.AttachHandleTypeField(),
        # JSON text, e.g. {"bus": "0c", "device": "00", "domain": "0000", "function": "1"}.
        'attach_info': fields.StringField(),
        'in_use': fields.BooleanField(default=False),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
    }
