"""Attribute: a key/value fact about a deployable (resource class, traits)."""

from cyborg.db.queries import attributes as attribute_queries
from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class Attribute(base.TableObject):
    """One key and value of a deployable, e.g. ``rc`` = ``FPGA``."""

    # Version 1.0: Initial version
    VERSION = '1.0'

    _queries = attribute_queries
    _list_query = 'list_attributes'

    fields = {
        'id': fields.IntegerField(read_only=True),
        'uuid': fields.UUIDField(),
        'deployable_id': fields.IntegerField(),
        'parent_attribute_id': fields.IntegerField(nullable=True),
        'key': fields.StringField(),
        'value': fields.StringField(nullable=True),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
    }
