"""Queries of the deployables table, each deployable with its attributes.

Functions return ``(deployable, attributes)`` pairs: the attributes of a
whole page come from one extra query, never one query per deployable.

The programming lock (``programming_owner``/``programming_expires_at``) is taken
and given back here by compare-and-set UPDATEs, which leave ``updated_at``
alone: a lock is bookkeeping, not a change of the deployable. A program
request takes it (``start_programming``), and so does a bind that programs
the region (``lock_for_bind``, ``finish_bind_programming``). A bind's
claim checks the lock by writing ``updated_at`` of its deployables
(``being_programmed``): on a Galera cluster only a write is seen by
another node.
"""

import sqlalchemy as sa

from cyborg.common import vocabulary
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import rows

# What start_programming answers.
LOCKED = 'locked'
HELD_BY_ARQ = 'held-by-arq'
BEING_PROGRAMMED = 'being-programmed'

Deployable = models.Deployable
# Filters and sort keys: the deployable's columns but the stored copy of its
# attributes, which nothing shows.
COLUMNS = {name: getattr(Deployable, name)
           for name in Deployable.__table__.columns.keys()
           if name not in models.DEPLOYABLE_DERIVED_COLUMNS}


@db_api.writer
def create(context, values):
    """Insert a deployable row; return it with its (empty) attributes."""
    return rows.create(context, Deployable, values), []


@db_api.reader
def get_by_uuid(context, uuid):
    """The deployable with ``uuid`` and its attributes.

    :raises: cyborg.exception.ResourceNotFound
    """
    return _with_attributes(
        context, [rows.get_by(context, Deployable, 'uuid', uuid)])[0]


@db_api.reader
def get_by_id(context, deployable_id):
    """The deployable with the internal ``deployable_id`` and its attributes.

    :raises: cyborg.exception.ResourceNotFound
    """
    return _with_attributes(
        context, [rows.get_by(context, Deployable, 'id', deployable_id)])[0]


@db_api.reader
def list_deployables(context, filters=None, limit=None, marker=None,
                     sort_key='id', sort_dir='asc'):
    """Deployables matching ``filters`` with their attributes, in two queries."""
    query = rows.page(context, Deployable, sa.select(Deployable), COLUMNS,
                      filters, limit, marker, sort_key, sort_dir)
    return _with_attributes(context, context.session.scalars(query).all())


@db_api.writer
def update(context, uuid, values):
    """Change columns of the deployable with ``uuid``; return it with its attributes."""
    return _with_attributes(
        context, [rows.update(context, Deployable, uuid, values)])[0]


@db_api.writer
def destroy(context, uuid):
    """Delete a deployable with its sub-deployables, attributes and attach handles."""
    rows.destroy(context, Deployable, uuid)


class _HeldByARQ(Exception):
    """Rolls the lock's transaction back: an ARQ holds the deployable."""


def start_programming(context, uuid, owner, now, expires_at):
    """Take the programming lock of deployable ``uuid`` for ``owner``.

    One transaction, outside any other: set the lock, until ``expires_at``,
    unless another one runs at ``now`` (BEING_PROGRAMMED), then,
    while holding the deployable's row, refuse when an ARQ in
    ``ARQState.HOLDING`` holds it or names its resource provider
    (HELD_BY_ARQ; the lock is rolled back). Returns LOCKED on success.

    The order closes the race with a bind: a bind's claim locks the rows
    of its deployables (``being_programmed``), so either it sees this lock
    or this reads its ARQ (a locking read, the latest committed rows).

    :raises: cyborg.exception.ResourceNotFound
    """
    try:
        return _take_programming_lock(context, uuid, owner, now,
                                      expires_at)
    except _HeldByARQ:
        return HELD_BY_ARQ


@db_api.writer
def _take_programming_lock(context, uuid, owner, now, expires_at):
    deployable = rows.get_by(context, Deployable, 'uuid', uuid)
    statement = sa.update(Deployable).where(
        Deployable.id == deployable.id,
        sa.or_(Deployable.programming_expires_at.is_(None),
               Deployable.programming_expires_at <= now),
    ).values(programming_owner=owner, programming_expires_at=expires_at,
             updated_at=Deployable.updated_at)
    taken = context.session.execute(
        statement, execution_options={'synchronize_session': False})
    if taken.rowcount != 1:
        return BEING_PROGRAMMED
    holders = [models.ARQ.deployable_id == deployable.id]
    if deployable.rp_uuid is not None:
        holders.append(models.ARQ.device_rp_uuid == deployable.rp_uuid)
    held = sa.select(models.ARQ.id).where(
        sa.or_(*holders), models.ARQ.state.in_(vocabulary.ARQState.HOLDING),
    ).with_for_update(read=True)
    if context.session.execute(held).first() is not None:
        raise _HeldByARQ()
    return LOCKED


@db_api.writer
def being_programmed(context, deployable_ids, now):
    """The ids among ``deployable_ids`` whose programming lock runs at ``now``
    (a program request's or another bind's).

    Their rows are locked until the caller's transaction ends (a bind's
    claim), so a programming request cannot start on them meanwhile. The
    lock is a write, of ``updated_at`` (the bind's claim changes what the
    deployable holds): a Galera cluster certifies only the rows a
    transaction wrote (``rows.touched``), so a program request on another
    node conflicts with the claim at commit and one of them is run again;
    a locking read alone would let both commit.
    """
    if not deployable_ids:
        return set()
    ids = sorted(deployable_ids)
    context.session.execute(sa.update(Deployable).where(
        Deployable.id.in_(ids)).values(
            updated_at=rows.touched(Deployable.updated_at, now)),
        execution_options={'synchronize_session': False})
    query = sa.select(Deployable.id, Deployable.programming_expires_at).where(
        Deployable.id.in_(ids))
    return {row.id for row in context.session.execute(query)
            if row.programming_expires_at is not None
            and row.programming_expires_at > now}


@db_api.reader
def attributes_of(context, deployable_ids):
    """``{deployable id: {key: value}}`` of these deployables, in one query."""
    found = {deployable_id: {} for deployable_id in deployable_ids}
    if not found:
        return found
    query = sa.select(models.Attribute.deployable_id, models.Attribute.key,
                      models.Attribute.value).where(
        models.Attribute.deployable_id.in_(sorted(found))
    ).order_by(models.Attribute.id)
    for deployable_id, key, value in context.session.execute(query):
        found[deployable_id][key] = value
    return found


@db_api.writer
def lock_for_bind(context, deployable_ids, owner, now, expires_at):
    """Take the programming lock of these deployables for a bind, in one
    statement; return how many were taken.

    The caller (a bind's claim) holds their rows since ``being_programmed``
    found them free, so every one is taken.
    """
    if not deployable_ids:
        return 0
    statement = sa.update(Deployable).where(
        Deployable.id.in_(sorted(deployable_ids)),
        sa.or_(Deployable.programming_expires_at.is_(None),
               Deployable.programming_expires_at <= now),
    ).values(programming_owner=owner, programming_expires_at=expires_at,
             updated_at=Deployable.updated_at)
    return context.session.execute(
        statement, execution_options={'synchronize_session': False}).rowcount


@db_api.writer
def finish_bind_programming(context, bitstreams, owner):
    """Record what binds loaded and give their locks back, in one statement.

    ``bitstreams`` maps deployable ids to the image now loaded, or to None
    when programming did not succeed (what the region holds is unknown
    then). Only deployables whose lock ``owner`` still holds change.
    Returns how many did.
    """
    if not bitstreams:
        return 0
    statement = sa.update(Deployable).where(
        Deployable.id.in_(sorted(bitstreams)),
        Deployable.programming_owner == owner,
    ).values(bitstream_id=sa.case(bitstreams, value=Deployable.id),
             programming_owner=None, programming_expires_at=None)
    return context.session.execute(
        statement, execution_options={'synchronize_session': False}).rowcount


@db_api.writer
def finish_programming(context, uuid, owner, bitstream_id):
    """Record ``bitstream_id`` and give the lock back, if ``owner`` holds it.

    Returns False when ``owner`` no longer holds the lock (it went stale
    and another conductor took it): nothing is written then.
    """
    statement = sa.update(Deployable).where(
        Deployable.uuid == uuid, Deployable.programming_owner == owner,
    ).values(bitstream_id=bitstream_id, programming_owner=None,
             programming_expires_at=None)
    done = context.session.execute(
        statement, execution_options={'synchronize_session': False})
    return done.rowcount == 1


@db_api.writer
def release_programming(context, uuid, owner):
    """Give the programming lock back unchanged; False if ``owner`` lost it."""
    statement = sa.update(Deployable).where(
        Deployable.uuid == uuid, Deployable.programming_owner == owner,
    ).values(programming_owner=None, programming_expires_at=None,
             updated_at=Deployable.updated_at)
    released = context.session.execute(
        statement, execution_options={'synchronize_session': False})
    return released.rowcount == 1


def _with_attributes(context, deployables):
    by_deployable = {deployable.id: [] for deployable in deployables}
    if by_deployable:
        query = sa.select(models.Attribute).where(
            models.Attribute.deployable_id.in_(list(by_deployable))
        ).order_by(models.Attribute.id)
        for attribute in context.session.scalars(query):
            by_deployable[attribute.deployable_id].append(attribute)
    return [(deployable, by_deployable[deployable.id])
            for deployable in deployables]
