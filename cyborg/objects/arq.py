"""ARQ: an accelerator request with its profile name and attach handle."""

from oslo_serialization import jsonutils
from oslo_utils import versionutils

from cyborg.common import vocabulary
from cyborg.db.queries import arqs as arq_queries
from cyborg.objects import base
from cyborg.objects import fields


@base.CyborgObjectRegistry.register
class ARQ(base.TableObject):
    """One accelerator for one instance (a row of extended_accelerator_requests).

    ``device_profile_name`` and the ``attach_handle_*`` fields come from the
    profile and the attach handle, joined in the same query; they are
    read-only here. An unbound ARQ has ``attach_handle_type`` and
    ``attach_handle_uuid`` None and ``attach_handle_info`` empty.
    """

    # Version 1.0: Initial version
    # Version 1.1: state_reason (why the last bind failed)
    VERSION = '1.1'

    _queries = arq_queries
    _list_query = 'list_arqs'
    _derived_fields = ('device_profile_name', 'attach_handle_type',
                       'attach_handle_uuid', 'attach_handle_info')

    fields = {
        'id': fields.IntegerField(read_only=True),
        'uuid': fields.UUIDField(),
        'state': fields.ARQStateField(default=vocabulary.ARQState.INITIAL),
        'device_profile_id': fields.IntegerField(),
        'device_profile_name': fields.StringField(),
        'device_profile_group_id': fields.IntegerField(),
        'hostname': fields.StringField(nullable=True),
        'device_rp_uuid': fields.UUIDField(nullable=True),
        'instance_uuid': fields.UUIDField(nullable=True),
        'project_id': fields.StringField(nullable=True),
        'attach_handle_id': fields.IntegerField(nullable=True),
        'deployable_id': fields.IntegerField(nullable=True),
        'attach_handle_type': fields.AttachHandleTypeField(nullable=True),
        'attach_handle_uuid': fields.UUIDField(nullable=True),
        'attach_handle_info': fields.DictOfNullableStringsField(),
        'state_reason': fields.StringField(nullable=True),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
    }

    def obj_make_compatible(self, primitive, target_version):
        """Backport to ``target_version``: 1.0 has no state_reason."""
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 1):
            primitive.pop('state_reason', None)

    @classmethod
    def unresolved_uuids(cls, context, instance_uuid, project_id=None):
        """Uuids of the instance's ARQs not yet Bound, BindFailed or Deleting.

        With ``project_id``, only that project's ARQs count.
        """
        return arq_queries.unresolved_uuids(context, instance_uuid,
                                            project_id)

    @classmethod
    def resolved_page(cls, context, filters, paging, project_id=None):
        """``(page, unresolved)`` of ``GET ?instance=X&bind_state=resolved``.

        ``unresolved``: the uuids of the instance's ARQs still to be
        resolved, in creation order; ``page`` (plain rows, as
        ``list_rows(plain=True)`` gives them, of ``filters`` and the paging
        keywords ``paging``) is None while there are any. One statement
        when the page holds the whole instance, else two or three (see
        ``cyborg.db.queries.arqs.resolved_page``).
        """
        return arq_queries.resolved_page(context, filters, paging,
                                         project_id)

    @classmethod
    def _from_result(cls, context, result):
        info = result.attach_handle_info
        return cls.from_db(
            context, result.ARQ,
            device_profile_name=result.device_profile_name,
            attach_handle_type=result.attach_handle_type,
            attach_handle_uuid=result.attach_handle_uuid,
            attach_handle_info=jsonutils.loads(info) if info else {})
