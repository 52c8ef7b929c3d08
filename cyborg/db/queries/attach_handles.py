"""Queries of the attach_handles table: what Nova attaches to an instance.

Every statement that reads or writes attach handles lives here: the
per-row functions of the object, and the set-based statements of the
binder (``lock_free``, ``take``, ``free``), of the ARQ workflows
(``free_held_by_arqs``) and of the inventory report (``of_host``,
``set_in_use``), each one statement whatever the number of handles.
"""

import sqlalchemy as sa

from cyborg.common import vocabulary
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import rows

AttachHandle = models.AttachHandle
HANDLES = AttachHandle.__table__
ARQS = models.ARQ.__table__
DEPLOYABLES = models.Deployable.__table__
DEVICES = models.Device.__table__
# Ids per "WHERE id IN (...)", below SQLite's limit on bound parameters.
IN_LIST_IDS = 10000
COLUMNS = {name: getattr(AttachHandle, name)
           for name in AttachHandle.__table__.columns.keys()}


@db_api.writer
def create(context, values):
    """Insert an attach handle row and return it."""
    return rows.create(context, AttachHandle, values)


@db_api.reader
def get_by_uuid(context, uuid):
    """The attach handle with ``uuid``.

    :raises: cyborg.exception.ResourceNotFound
    """
    return rows.get_by(context, AttachHandle, 'uuid', uuid)


@db_api.reader
def list_attach_handles(context, filters=None, limit=None, marker=None,
                        sort_key='id', sort_dir='asc'):
    """Attach handles matching ``filters`` (column name to value), one page, in one query."""
    query = rows.page(context, AttachHandle, sa.select(AttachHandle), COLUMNS, filters,
                      limit, marker, sort_key, sort_dir)
    return context.session.scalars(query).all()


@db_api.writer
def update(context, uuid, values):
    """Change columns of the attach handle with ``uuid``; return the row."""
    return rows.update(context, AttachHandle, uuid, values)


@db_api.writer
def destroy(context, uuid):
    """Delete the attach handle with ``uuid``."""
    rows.destroy(context, AttachHandle, uuid)


# -- Set-based statements ----------------------------------------------------

# Built once: the binder runs these on every bind, and building and
# hashing a statement costs more CPU than the database takes to run it.
_LOCK_FREE = sa.select(
    HANDLES.c.id, HANDLES.c.uuid, HANDLES.c.deployable_id,
    HANDLES.c.attach_type, HANDLES.c.attach_info,
    sa.exists().where(ARQS.c.attach_handle_id == HANDLES.c.id).label('held'),
).where(
    HANDLES.c.deployable_id.in_(sa.bindparam('deployable_ids',
                                             expanding=True)),
    HANDLES.c.in_use == sa.false(),
).order_by(HANDLES.c.deployable_id, HANDLES.c.id).with_for_update()
_TAKE = sa.update(HANDLES).where(
    HANDLES.c.id.in_(sa.bindparam('handle_ids', expanding=True)),
    HANDLES.c.in_use == sa.false(),
).values(in_use=True, updated_at=sa.bindparam('now'))
_FREE = sa.update(HANDLES).where(
    HANDLES.c.id.in_(sa.bindparam('handle_ids', expanding=True)),
).values(in_use=False, updated_at=sa.bindparam('now'))


@db_api.writer
def lock_free(context, deployable_ids):
    """The free attach handles of these deployables, locked until commit.

    One locking read: on MariaDB and PostgreSQL it waits for a concurrent
    binder that holds one of these handles and then sees that binder's
    result, so a handle it took is no longer free here. SQLite has a
    single writer, which gives the same guarantee. Each row also says
    whether an ARQ holds the handle anyway (``held``: a handle marked free
    by mistake, which the binder skips), read in the same statement.
    """
    if not deployable_ids:
        return []
    return context.session.connection().execute(
        _LOCK_FREE, {'deployable_ids': sorted(deployable_ids)}
    ).mappings().all()


@db_api.writer
def take(context, attach_handle_ids, now):
    """Mark free attach handles in use; return how many this statement took."""
    if not attach_handle_ids:
        return 0
    return context.session.connection().execute(
        _TAKE, {'handle_ids': sorted(attach_handle_ids), 'now': now}
    ).rowcount


@db_api.writer
def free(context, attach_handle_ids, now):
    """Mark attach handles free again, in one statement."""
    if not attach_handle_ids:
        return 0
    return context.session.connection().execute(
        _FREE, {'handle_ids': sorted(attach_handle_ids), 'now': now}
    ).rowcount


@db_api.writer
def free_held_by_arqs(context, arq_ids, now):
    """Mark the attach handles held by these ARQs free, in one statement."""
    held_ids = sa.select(ARQS.c.attach_handle_id).where(
        ARQS.c.id.in_(sorted(arq_ids)),
        ARQS.c.attach_handle_id.is_not(None))
    statement = sa.update(HANDLES).where(
        HANDLES.c.id.in_(held_ids)).values(in_use=False, updated_at=now)
    context.session.connection().execute(statement)


@db_api.reader
def of_host(context, host):
    """Every attach handle of the deployables of ``host``, in one query."""
    deployable_ids = sa.select(DEPLOYABLES.c.id).join(
        DEVICES, DEPLOYABLES.c.device_id == DEVICES.c.id).where(
        DEVICES.c.hostname == host)
    query = sa.select(HANDLES).where(
        HANDLES.c.deployable_id.in_(deployable_ids)).order_by(HANDLES.c.id)
    return context.session.execute(query).mappings().all()


@db_api.writer
def set_in_use(context, attach_handle_ids, in_use, updated_at):
    """Set ``in_use`` on the given attach handles, one statement per
    IN_LIST_IDS handles.

    Clearing it skips the handles an ARQ holds: once bound, a handle's
    ``in_use`` belongs to the conductor, whatever a driver reports.
    """
    ordered = sorted(attach_handle_ids)
    for start in range(0, len(ordered), IN_LIST_IDS):
        statement = sa.update(HANDLES).where(
            HANDLES.c.id.in_(ordered[start:start + IN_LIST_IDS])).values(
            in_use=in_use, updated_at=updated_at)
        if not in_use:
            holding = sa.select(ARQS.c.id).where(
                ARQS.c.attach_handle_id == HANDLES.c.id,
                ARQS.c.state.in_(vocabulary.ARQState.HOLDING))
            statement = statement.where(~sa.exists(holding))
        context.session.connection().execute(statement)
