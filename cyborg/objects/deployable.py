"""Deployable: an assignable part of a device, with its attributes."""

from cyborg import exception
from cyborg.db.queries import deployable_filters
from cyborg.db.queries import deployables as deployable_queries
from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class Deployable(base.TableObject):
    """A node of a device's deployable tree; one Placement RP when it has accelerators.

    ``attributes_list`` is read-only here: the deployable's attributes as
    ``[{key: value}, ...]`` in creation order, loaded with it. Change them
    through ``Attribute``.
    """

    # Version 1.0: Initial version
    # Version 1.1: health, health_reason, health_since and drain_since
    VERSION = '1.1'

    _queries = deployable_queries
    _list_query = 'list_deployables'
    _derived_fields = ('attributes_list',)

    fields = {
        'id': fields.IntegerField(read_only=True),
        'uuid': fields.UUIDField(),
        'parent_id': fields.IntegerField(nullable=True),
        'root_id': fields.IntegerField(nullable=True),
        'name': fields.StringField(),
        'num_accelerators': fields.IntegerField(default=0),
        'device_id': fields.IntegerField(),
        'driver_name': fields.StringField(nullable=True),
        'rp_uuid': fields.UUIDField(nullable=True),
        'bitstream_id': fields.StringField(nullable=True),
        'attributes_list': fields.ListOfDictOfNullableStringsField(),
        **fields.health_and_drain(),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
    }

    def obj_make_compatible(self, primitive, target_version):
        """Backport to ``target_version``: 1.0 has no health or drain."""
        super().obj_make_compatible(primitive, target_version)
        fields.drop_health_and_drain(primitive, target_version)

    @classmethod
    def _from_result(cls, context, result):
        deployable, attributes = result
        return cls.from_db(
            context, deployable,
            attributes_list=[{attribute.key: attribute.value}
                             for attribute in attributes])

    @classmethod
    def get_by_id(cls, context, deployable_id):
        """The deployable with the internal ``deployable_id``.

        :raises: cyborg.exception.ResourceNotFound
        """
        return cls._from_result(
            context, deployable_queries.get_by_id(context, deployable_id))

    @classmethod
    def list_rows(cls, context, filters=None, attributes=None, limit=None,
                  marker=None, sort_key=None, sort_dir=None, programmed=None,
                  tree_uuids=False, nested_attributes=False, fleet=False,
                  plain=False):
        """One page of deployables as ``(row, attributes_list)`` pairs.

        For lists that only render (GET /v2/deployables): each row is a
        read-only row with a Deployable's column attributes and
        ``attributes_list`` what the object's field would hold. Besides the
        deployable's columns, ``filters`` may name its device's
        ``hostname``, ``vendor`` and ``type``; ``attributes`` are (key,
        value) pairs every deployable must have; ``programmed`` True or
        False keeps those with or without a bitstream loaded. With
        ``tree_uuids`` each row also has ``parent_uuid`` and ``root_uuid``;
        with ``nested_attributes`` nested attributes come under their
        parent in ``attributes_list`` (both microversion 2.4); with
        ``fleet`` its health and drain (2.6).
        ``attributes_list`` is JSON text, as the API shows it. One SQL
        statement, whatever the page size (see
        ``cyborg.db.queries.deployable_filters.list_rows``). With ``plain``
        each row is a tuple, and the pairs a ``lean.Page``.

        :raises: cyborg.exception.InvalidParameterValue on an unknown
            filter, sort key or marker
        """
        return deployable_filters.list_rows(
            context, filters=filters, attributes=attributes, limit=limit,
            marker=marker, sort_key=sort_key or 'id',
            sort_dir=sort_dir or 'asc', programmed=programmed,
            tree_uuids=tree_uuids, nested_attributes=nested_attributes,
            fleet=fleet, plain=plain)

    @classmethod
    def get_row(cls, context, uuid, tree_uuids=False,
                nested_attributes=False, fleet=False):
        """The deployable with ``uuid`` as the ``(row, attributes_list)``
        pair ``list_rows`` would give it. One SQL statement (two with
        nested attributes to show).

        :raises: cyborg.exception.ResourceNotFound
        """
        found = deployable_filters.list_rows(
            context, filters={'uuid': uuid}, limit=1, tree_uuids=tree_uuids,
            nested_attributes=nested_attributes, fleet=fleet)
        if not found:
            raise exception.ResourceNotFound(resource='Deployable',
                                             key='uuid', value=uuid)
        return found[0]
