"""Queries of the extended_accelerator_requests table (ARQs).

Each ARQ comes back as one row holding the ARQ, its device profile's name
and its attach handle's type, uuid and info, read with joins in one query.
"""

import sqlalchemy as sa

from cyborg.common import vocabulary
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import attach_handles
from cyborg.db.queries import rows

ARQ = models.ARQ
ARQ_TABLE = ARQ.__table__
# Fields that come from joined tables, by the name the ARQ object gives them.
JOINED = {
    'device_profile_name': models.DeviceProfile.name,
    'attach_handle_type': models.AttachHandle.attach_type,
    'attach_handle_uuid': models.AttachHandle.uuid,
    'attach_handle_info': models.AttachHandle.attach_info,
}
COLUMNS = {name: getattr(ARQ, name) for name in ARQ.__table__.columns.keys()}
COLUMNS.update({name: column for name, column in JOINED.items()
                if name != 'attach_handle_info'})


def _select():
    return sa.select(
        ARQ, *(column.label(name) for name, column in JOINED.items())
    ).join(
        models.DeviceProfile, ARQ.device_profile_id == models.DeviceProfile.id
    ).outerjoin(
        models.AttachHandle, ARQ.attach_handle_id == models.AttachHandle.id)


def _get(context, uuid):
    row = None
    if rows.storable(uuid):
        row = context.session.execute(
            _select().where(ARQ.uuid == uuid)).first()
    if row is None:
        # Raise the same not-found error as every other table.
        rows.get_by(context, ARQ, 'uuid', uuid)
    return row


@db_api.writer
def create(context, values):
    """Insert an ARQ row; return it joined with its profile and attach handle."""
    arq = rows.create(context, ARQ, values)
    return _get(context, arq.uuid)


@db_api.reader
def get_by_uuid(context, uuid):
    """The ARQ with ``uuid``, joined with its profile and attach handle.

    :raises: cyborg.exception.ResourceNotFound
    """
    return _get(context, uuid)


@db_api.reader
def list_arqs(context, filters=None, limit=None, marker=None, sort_key='id',
              sort_dir='asc'):
    """ARQs matching ``filters`` (ARQ column or joined field name to value), in one query."""
    query = rows.page(context, ARQ, _select(), COLUMNS, filters, limit,
                      marker, sort_key, sort_dir)
    return context.session.execute(query).all()


# The ARQ's own columns an API list shows (cyborg.api.views.arqs): only
# these are read (the bind's bookkeeping columns are not, nor formatted).
LISTED_COLUMNS = ('uuid', 'state', 'device_profile_group_id', 'hostname',
                  'device_rp_uuid', 'instance_uuid', 'project_id',
                  'state_reason', 'created_at', 'updated_at')


# A list page's SELECT before its filters and paging, built once.
_LIST_PAGE = sa.select(
    *rows.rendered(ARQ_TABLE.c[name] for name in LISTED_COLUMNS),
    *(column.label(name) for name, column in JOINED.items())
).join(
    models.DeviceProfile, ARQ.device_profile_id == models.DeviceProfile.id
).outerjoin(
    models.AttachHandle, ARQ.attach_handle_id == models.AttachHandle.id)


def _deployable_tree(deployable_uuid):
    """The ids of the deployable ``deployable_uuid`` and of every one
    below it in its tree: a recursive common table expression."""
    deployables = models.Deployable.__table__
    tree = sa.select(deployables.c.id).where(
        deployables.c.uuid == deployable_uuid).cte(
            'deployable_tree', recursive=True)
    return tree.union_all(sa.select(deployables.c.id).where(
        deployables.c.parent_id == tree.c.id))


def _held_of(filters):
    """``filters`` without the holder filters (``device_uuid``,
    ``deployable_uuid``: uuids, validated), and the conditions they stand
    for: the ARQ holds an attach handle of that device, or of that
    deployable or one below it. Each is a subquery of the page's one
    statement."""
    filters = dict(filters or {})
    conditions = []
    handle_deployable = models.AttachHandle.deployable_id
    if 'device_uuid' in filters:
        deployables = models.Deployable.__table__
        devices = models.Device.__table__
        conditions.append(handle_deployable.in_(
            sa.select(deployables.c.id).join(
                devices, devices.c.id == deployables.c.device_id).where(
                    devices.c.uuid == filters.pop('device_uuid'))))
    if 'deployable_uuid' in filters:
        tree = _deployable_tree(filters.pop('deployable_uuid'))
        conditions.append(handle_deployable.in_(sa.select(tree.c.id)))
    return filters, conditions


@db_api.reader
def list_rows(context, filters=None, limit=None, marker=None, sort_key='id',
              sort_dir='asc', plain=False):
    """The page of ``list_arqs`` as read-only Core rows of the columns a
    list shows (``LISTED_COLUMNS``) and the joined fields
    (``attach_handle_info`` JSON text), in one query (with ``plain``, a
    ``lean.Page`` of tuples).

    Besides the columns, ``filters`` may hold ``device_uuid`` and
    ``deployable_uuid``: only the ARQs holding an attach handle of that
    device, or of that deployable or one below it in its tree, whatever
    their state (subqueries of the same statement).
    """
    filters, conditions = _held_of(filters)
    query = rows.page(context, ARQ, _LIST_PAGE.where(*conditions), COLUMNS,
                      filters, limit, marker, sort_key, sort_dir)
    return rows.read(context, query, plain=plain)


@db_api.writer
def update(context, uuid, values):
    """Change columns of the ARQ with ``uuid``; return it joined again."""
    rows.update(context, ARQ, uuid, values)
    return _get(context, uuid)


@db_api.writer
def destroy(context, uuid):
    """Delete the ARQ with ``uuid``."""
    rows.destroy(context, ARQ, uuid)


# -- Set-based statements of the ARQ workflows (cyborg.conductor.arqs) --
#
# Each touches all the ARQs it is given in one statement, so that creating,
# binding, unbinding or deleting N ARQs costs as many statements as one.



def _owned(query, table, project_id):
    """``query`` limited to ``project_id``'s ARQs unless it is None (all)."""
    if project_id is None:
        return query
    return query.where(table.c.project_id == project_id)


@db_api.writer
def create_many(context, values_list):
    """Insert one ARQ per dict of ``values_list`` in one statement; return them joined.

    The rows come back in the order of ``values_list``.
    """
    if not values_list:
        return []
    context.session.execute(sa.insert(ARQ), values_list)
    uuids = [values['uuid'] for values in values_list]
    found = {row.ARQ.uuid: row for row in context.session.execute(
        _select().where(ARQ.uuid.in_(uuids)))}
    return [found[uuid] for uuid in uuids]


@db_api.writer
def lock_arqs(context, uuids=None, instance_uuid=None, project_id=None):
    """The ARQs with these uuids, or of this instance, locked until commit.

    Rows are mappings of id, uuid, state, attach_handle_id and the binding
    (instance_uuid, hostname, device_rp_uuid, project_id); with
    ``project_id`` only that project's ARQs are seen.
    """
    table = ARQ_TABLE
    query = sa.select(table.c.id, table.c.uuid, table.c.state,
                      table.c.instance_uuid, table.c.attach_handle_id,
                      table.c.hostname, table.c.device_rp_uuid,
                      table.c.project_id)
    if uuids is not None:
        query = query.where(table.c.uuid.in_(sorted(set(uuids))))
    if instance_uuid is not None:
        query = query.where(table.c.instance_uuid == instance_uuid)
    query = _owned(query, table, project_id).order_by(
        table.c.id).with_for_update()
    return context.session.execute(query).mappings().all()


@db_api.writer
def bound_to_instances(context, instance_uuids, states, excluded_ids):
    """Uuid and instance of the ARQs of these instances in ``states``, except ``excluded_ids``.

    Binds of one instance take turns from here to the end of their
    transactions, so that the answer stays true until the caller commits:
    PostgreSQL takes a transaction-level advisory lock per instance (its
    reads do not lock rows that do not exist yet); MySQL/MariaDB lock the
    index range of the instances with a locking read, which makes a
    concurrent bind of the same instance wait or fail as a deadlock that
    the writer retries; SQLite has one writer at a time anyway.
    """
    if not instance_uuids:
        return []
    instance_uuids = sorted(set(instance_uuids))
    table = ARQ_TABLE
    dialect = context.session.get_bind().dialect.name
    if dialect == 'postgresql':
        keys = sa.func.unnest(sa.literal(instance_uuids, sa.ARRAY(sa.Text)))
        context.session.execute(sa.select(sa.func.count(
            sa.func.pg_advisory_xact_lock(
                sa.func.hashtextextended(sa.column('instance'), 0)))).select_from(
                    keys.alias('instance')))
    query = sa.select(table.c.uuid, table.c.instance_uuid).where(
        table.c.instance_uuid.in_(instance_uuids),
        table.c.state.in_(states),
        table.c.id.not_in(sorted(excluded_ids)),
    ).order_by(table.c.id)
    if dialect == 'mysql':
        query = query.with_for_update()
    return context.session.execute(query).mappings().all()


# Who asked for a bind (``requester`` of ``start_binds``), by the ARQ
# column that keeps it.
REQUESTER_COLUMNS = {'user_id': 'bind_user_id',
                     'project_id': 'bind_project_id',
                     'request_id': 'bind_request_id'}


def _requester_values(requester):
    """The ARQ columns of ``requester``, each cut to its column's length."""
    values = {}
    for key, column in REQUESTER_COLUMNS.items():
        value = (requester or {}).get(key)
        if value is not None:
            value = str(value)[:ARQ_TABLE.c[column].type.length]
        values[column] = value
    return values


@db_api.writer
def start_binds(context, bindings, from_states, now, lease=None,
                requester=None):
    """Set BindStarted and each ARQ's binding in one guarded statement.

    ``bindings`` maps an ARQ id to a dict of hostname, device_rp_uuid,
    instance_uuid and project_id (None keeps the ARQ's project). ``lease``,
    an ``(owner, expires_at)`` pair, leases the ARQs to that binder in the
    same statement (None: to nobody). ``requester`` (``user_id``,
    ``project_id``, ``request_id``: the caller who asked for the bind) is
    kept with the ARQs for the history entry of the bind's end. Only ARQs
    still in ``from_states`` change; returns how many did.
    """
    if not bindings:
        return 0
    table = ARQ_TABLE

    def per_arq(name):
        return sa.case({arq_id: binding[name]
                        for arq_id, binding in bindings.items()},
                       value=table.c.id)

    projects = {arq_id: binding['project_id']
                for arq_id, binding in bindings.items()
                if binding.get('project_id') is not None}
    values = {'state': vocabulary.ARQState.BIND_STARTED, 'hostname': per_arq('hostname'),
              'device_rp_uuid': per_arq('device_rp_uuid'),
              'instance_uuid': per_arq('instance_uuid'),
              'attach_handle_id': None, 'deployable_id': None,
              'bind_owner': None, 'bind_lease_expires_at': None,
              'bind_event_pending': None, 'state_reason': None,
              # The binder counts bind_timeout from here.
              'updated_at': now, **_requester_values(requester)}
    if lease is not None:
        values['bind_owner'], values['bind_lease_expires_at'] = lease
    if projects:
        values['project_id'] = sa.case(projects, value=table.c.id,
                                       else_=table.c.project_id)
    statement = sa.update(table).where(
        table.c.id.in_(sorted(bindings)),
        table.c.state.in_(from_states)).values(**values)
    return context.session.connection().execute(statement).rowcount


@db_api.writer
def unbind_many(context, arq_ids, from_states, now):
    """Unbind these ARQs and free their attach handles: two statements.

    Only ARQs still in ``from_states`` change; returns how many did (the
    caller rolls back when that is short).
    """
    if not arq_ids:
        return 0
    attach_handles.free_held_by_arqs(context, arq_ids, now)
    table = ARQ_TABLE
    statement = sa.update(table).where(
        table.c.id.in_(sorted(arq_ids)),
        table.c.state.in_(from_states),
    ).values(state=vocabulary.ARQState.UNBOUND, hostname=None, device_rp_uuid=None,
             instance_uuid=None, attach_handle_id=None, deployable_id=None,
             bind_owner=None, bind_lease_expires_at=None,
             bind_event_pending=None, state_reason=None, updated_at=now,
             **_requester_values(None))
    return context.session.connection().execute(statement).rowcount


@db_api.writer
def destroy_many(context, arq_ids, now):
    """Free the attach handles of these ARQs and delete them: two statements."""
    if not arq_ids:
        return 0
    attach_handles.free_held_by_arqs(context, arq_ids, now)
    statement = sa.delete(ARQ_TABLE).where(ARQ_TABLE.c.id.in_(sorted(arq_ids)))
    return context.session.connection().execute(statement).rowcount


@db_api.reader
def unresolved_uuids(context, instance_uuid, project_id=None):
    """Uuids of the instance's ARQs not yet Bound, BindFailed or Deleting."""
    table = ARQ_TABLE
    query = sa.select(table.c.uuid).where(
        table.c.instance_uuid == instance_uuid,
        table.c.state.in_(vocabulary.ARQState.UNRESOLVED))
    return list(context.session.scalars(
        _owned(query, table, project_id).order_by(table.c.id)))


# -- The page of GET ?instance=X&bind_state=resolved --


def _may_be_whole(filters, paging):
    """Whether a page of ``paging`` (``list_rows``'s keywords) holds every
    ARQ of the instance ``filters`` names that the caller may see, if it is
    not full: filtered by the instance alone (and the caller's project), no
    marker, in creation order (Nova's call)."""
    return (set(filters) <= {'instance_uuid', 'project_id'}
            and paging.get('marker') is None
            and (paging.get('sort_key') or 'id') == 'id'
            and (paging.get('sort_dir') or 'asc') == 'asc')


def resolved_page(context, filters, paging, project_id=None):
    """``(page, unresolved)`` of ``GET ?instance=X&bind_state=resolved``.

    ``unresolved`` lists, in creation order, the uuids of the ARQs of the
    instance ``filters['instance_uuid']`` (of ``project_id``, unless it is
    None) still to be resolved; while there are any, ``page`` is None.
    Else ``page`` is the ``list_rows(plain=True)`` page of ``filters`` and
    ``paging``.

    The states are read off the page when it holds the whole instance (one
    statement); else they are asked for first and the page read after
    them, never older (a page read before them could show BindStarted an
    ARQ whose bind ended in between, answered as resolved). A page that
    turns out full is read again after the states for the same reason.
    Each read is a transaction of its own, as the API's reads are.
    """
    if _may_be_whole(filters, paging):
        page = list_rows(context, filters=filters, plain=True, **paging)
        if len(page) < paging['limit']:
            uuid_at, state_at = (page.fields.index(name)
                                 for name in ('uuid', 'state'))
            unresolved = [row[uuid_at] for row in page
                          if row[state_at] in vocabulary.ARQState.UNRESOLVED]
            return (None if unresolved else page), unresolved
    unresolved = unresolved_uuids(context, filters['instance_uuid'],
                                  project_id)
    if unresolved:
        return None, unresolved
    return list_rows(context, filters=filters, plain=True, **paging), []
