"""Bases shared by cyborg's versioned objects and the RPC serializer."""

from oslo_utils import uuidutils
from oslo_utils import versionutils
from oslo_versionedobjects import base as ovo_base


class CyborgObjectRegistry(ovo_base.VersionedObjectRegistry):
    """The registry of cyborg's objects; objects.Foo names the newest class."""

    def registration_hook(self, cls, index):
        from cyborg import objects
        setattr(objects, cls.obj_name(), cls)


class CyborgObject(ovo_base.VersionedObject):
    """Base of every cyborg object."""

    OBJ_SERIAL_NAMESPACE = 'cyborg_object'
    OBJ_PROJECT_NAMESPACE = 'cyborg'

    def as_dict(self):
        """The set fields as a plain dict."""
        return {name: getattr(self, name) for name in self.fields
                if self.obj_attr_is_set(name)}


class TableObject(CyborgObject):
    """Base of an object kept in one table through a ``cyborg.db.queries`` module.

    A subclass names its query module (``_queries``, with create,
    get_by_uuid, update, destroy and the list function named by
    ``_list_query``) and the fields that are not its own columns
    (``_derived_fields``). It overrides ``_from_result`` and
    ``_column_values`` where a field and its column differ.
    """

    _queries = None
    _list_query = None
    _derived_fields = ()
    # Set by the database, never written from an object.
    _database_fields = ('id', 'created_at', 'updated_at')

    @classmethod
    def from_db(cls, context, row, **values):
        """An object filled from ``row``'s same-named attributes and ``values``."""
        obj = cls(context)
        for name in cls.fields:
            if name in values:
                setattr(obj, name, values[name])
            elif hasattr(row, name):
                setattr(obj, name, getattr(row, name))
        obj.obj_reset_changes()
        return obj

    @classmethod
    def _from_result(cls, context, result):
        return cls.from_db(context, result)

    def _column_values(self, changes):
        skipped = set(self._derived_fields) | set(self._database_fields)
        return {name: value for name, value in changes.items()
                if name not in skipped}

    def _refresh_from(self, other):
        for name in self.fields:
            if other.obj_attr_is_set(name):
                setattr(self, name, getattr(other, name))
        self.obj_reset_changes()

    @classmethod
    def get_by_uuid(cls, context, uuid):
        """The object with ``uuid``.

        :raises: cyborg.exception.ResourceNotFound
        """
        return cls._from_result(context, cls._queries.get_by_uuid(context, uuid))

    @classmethod
    def list(cls, context, filters=None, limit=None, marker=None,
             sort_key=None, sort_dir=None):
        """Objects whose fields equal ``filters``, one page, sorted in SQL.

        A filter value that is a list matches any of its members.
        ``marker`` is the uuid of the last object of the previous page;
        the order is ``sort_key`` (default ``id``) then ``id``, ascending
        unless ``sort_dir`` is ``desc``.

        :raises: cyborg.exception.InvalidParameterValue on an unknown
            filter, sort key or marker
        """
        list_query = getattr(cls._queries, cls._list_query)
        results = list_query(context, filters=filters, limit=limit,
                             marker=marker, sort_key=sort_key or 'id',
                             sort_dir=sort_dir or 'asc')
        return [cls._from_result(context, result) for result in results]

    @classmethod
    def list_rows(cls, context, filters=None, limit=None, marker=None,
                  sort_key=None, sort_dir=None, plain=False):
        """The page ``list`` would give as read-only rows, not objects.

        For lists that only render: no object is built per row. Only for
        tables whose query module has a ``list_rows``; one SQL query.
        With ``plain``, a ``cyborg.db.queries.lean.Page`` of tuples (the
        API's lists: a row read by position costs less, and no Row is
        made per row).

        :raises: cyborg.exception.InvalidParameterValue on an unknown
            filter, sort key or marker
        """
        return cls._queries.list_rows(
            context, filters=filters, limit=limit, marker=marker,
            sort_key=sort_key or 'id', sort_dir=sort_dir or 'asc',
            plain=plain)

    def create(self, context):
        """Insert this object as a new row (uuid generated if unset); reload it."""
        if 'uuid' in self.fields and not self.obj_attr_is_set('uuid'):
            self.uuid = uuidutils.generate_uuid()
        values = self._column_values(self.obj_get_changes())
        self._refresh_from(
            self._from_result(context, self._queries.create(context, values)))

    def save(self, context):
        """Write the changed fields to the row; reload it."""
        values = self._column_values(self.obj_get_changes())
        if values:
            result = self._queries.update(context, self.uuid, values)
            self._refresh_from(self._from_result(context, result))
        self.obj_reset_changes()

    def destroy(self, context):
        """Delete the row (the database removes or detaches dependent rows).

        :raises: cyborg.exception.ResourceNotFound
        """
        self._queries.destroy(context, self.uuid)


def local_versions():
    """{object name: version} of this release's objects: what a caller of
    an RPC call can read, sent along with the call's context."""
    return {name: classes[0].VERSION
            for name, classes in CyborgObjectRegistry.obj_classes().items()}


class CyborgObjectSerializer(ovo_base.VersionedObjectSerializer):
    """Serializes cyborg objects for oslo.messaging.

    An object is sent at the version its reader can read: a server answers
    a caller that named its versions (``context.peer_object_versions``,
    set from the call's context by ``cyborg.rpc``) with each object
    backported to the caller's version, so that a service of the previous
    release keeps reading the answers of an upgraded one. Callers that
    name none (and callers newer than the server) get this release's.
    """

    OBJ_BASE_CLASS = CyborgObject

    def serialize_entity(self, context, entity):
        if isinstance(entity, (tuple, list, set, dict)):
            return self._process_iterable(context, self.serialize_entity,
                                          entity)
        if not isinstance(entity, ovo_base.VersionedObject):
            return entity
        manifest = getattr(context, 'peer_object_versions', None)
        target = (manifest or {}).get(entity.obj_name())
        if target is None or not _older(target, entity.VERSION):
            return entity.obj_to_primitive()
        return entity.obj_to_primitive(target_version=target,
                                       version_manifest=manifest)


def _older(version, than):
    """Whether object version ``version`` is older than ``than``."""
    return (versionutils.convert_version_to_tuple(version)
            < versionutils.convert_version_to_tuple(than))
