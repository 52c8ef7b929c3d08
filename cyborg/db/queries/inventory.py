"""Set-based queries of one host's whole inventory, for the agents' reports.

Each function reads or writes many rows of one table in a single statement
(or one per batch of inserted rows), whatever the number of devices, so an
inventory report costs a bounded number of statements. The reconciliation
that uses them is ``cyborg.conductor.inventory_report``.
"""

import sqlalchemy as sa

from cyborg.common import vocabulary
from cyborg.db import api as db_api
from cyborg.db import models

Device = models.Device.__table__
ControlpathID = models.ControlpathID.__table__
Deployable = models.Deployable.__table__
Attribute = models.Attribute.__table__
AttachHandle = models.AttachHandle.__table__
ARQ = models.ARQ.__table__

# Rows per INSERT statement (SQLAlchemy lowers it further to stay within a
# backend's limit on bound parameters, e.g. SQLite's 32766).
INSERT_PAGE_ROWS = 5000
# Ids per "WHERE id IN (...)", below SQLite's limit on bound parameters.
IN_LIST_IDS = 10000


def _device_ids_of(host):
    return sa.select(Device.c.id).where(Device.c.hostname == host)


def _deployable_ids_of(host):
    return sa.select(Deployable.c.id).join(
        Device, Deployable.c.device_id == Device.c.id).where(
        Device.c.hostname == host)


@db_api.reader
def devices_of_host(context, host):
    """The devices of ``host`` with their control path ids, in one query.

    A device with several control path ids comes once per control path id;
    one without any comes once with ``cpid_id`` None.
    """
    query = sa.select(
        Device,
        ControlpathID.c.id.label('cpid_id'),
        ControlpathID.c.cpid_type,
        ControlpathID.c.cpid_info,
    ).outerjoin(ControlpathID, ControlpathID.c.device_id == Device.c.id).where(
        Device.c.hostname == host).order_by(Device.c.id, ControlpathID.c.id)
    return context.session.execute(query).mappings().all()


# What a report compares of a deployable: every column but the stored copy
# of its attributes (the report reads the attributes themselves).
_REPORTED_DEPLOYABLE_COLUMNS = [
    column for column in Deployable.columns
    if column.name not in models.DEPLOYABLE_DERIVED_COLUMNS]


@db_api.reader
def deployables_of_host(context, host):
    """Every deployable of the devices of ``host`` (its columns but
    ``attributes_list`` and ``has_nested_attributes``), in one query."""
    query = sa.select(*_REPORTED_DEPLOYABLE_COLUMNS).where(
        Deployable.c.device_id.in_(_device_ids_of(host))).order_by(
        Deployable.c.id)
    return context.session.execute(query).mappings().all()


@db_api.reader
def attributes_of_host(context, host):
    """Every attribute of the deployables of ``host``, in one query."""
    query = sa.select(Attribute).where(
        Attribute.c.deployable_id.in_(_deployable_ids_of(host))).order_by(
        Attribute.c.id)
    return context.session.execute(query).mappings().all()


@db_api.reader
def held_by_arqs(context, host):
    """Deployable ids and attach handle ids of ``host`` that ARQs hold.

    An ARQ holds what it names while it is Bound or BindStarted. Returns
    two sets, ``(deployable_ids, attach_handle_ids)``, from one query.
    """
    handle_ids_of_host = sa.select(AttachHandle.c.id).where(
        AttachHandle.c.deployable_id.in_(_deployable_ids_of(host)))
    query = sa.select(ARQ.c.deployable_id,
                      ARQ.c.attach_handle_id).where(
        ARQ.c.state.in_(vocabulary.ARQState.HOLDING),
        sa.or_(ARQ.c.deployable_id.in_(_deployable_ids_of(host)),
               ARQ.c.attach_handle_id.in_(handle_ids_of_host)))
    deployable_ids = set()
    attach_handle_ids = set()
    for deployable_id, attach_handle_id in context.session.execute(query):
        if deployable_id is not None:
            deployable_ids.add(deployable_id)
        if attach_handle_id is not None:
            attach_handle_ids.add(attach_handle_id)
    return deployable_ids, attach_handle_ids


@db_api.reader
def arqs_holding(context, deployable_ids):
    """{deployable id: [ARQ uuid, ...]} of the ARQs holding these
    deployables (Bound or BindStarted), in one query."""
    found = {}
    for chunk in id_chunks(deployable_ids):
        query = sa.select(ARQ.c.deployable_id, ARQ.c.uuid).where(
            ARQ.c.state.in_(vocabulary.ARQState.HOLDING),
            ARQ.c.deployable_id.in_(chunk)).order_by(ARQ.c.id)
        for deployable_id, arq_uuid in context.session.execute(query):
            found.setdefault(deployable_id, []).append(arq_uuid)
    return found


@db_api.writer
def insert_rows(context, table, rows):
    """Insert ``rows`` (dicts holding a ``uuid``) into ``table``; return {uuid: id}.

    One INSERT ... RETURNING per INSERT_PAGE_ROWS rows (SQLAlchemy's
    insertmanyvalues), never one per row.
    """
    if not rows:
        return {}
    statement = sa.insert(table).returning(
        table.c.uuid, table.c.id).execution_options(
        insertmanyvalues_page_size=INSERT_PAGE_ROWS)
    result = context.session.connection().execute(statement, list(rows))
    return {uuid: row_id for uuid, row_id in result}


@db_api.writer
def update_rows(context, table, rows, kept=()):
    """Set the columns of each row dict on the row whose id is its ``id``.

    Every dict has the same keys; one executemany UPDATE for all of them.
    A column named in ``kept`` is left as the database holds it at the
    UPDATE on the rows whose dict says ``keep_<column>``: a change
    committed since the row was read is not undone.
    """
    if not rows:
        return
    flags = {'keep_' + name for name in kept}
    columns = [name for name in rows[0] if name != 'id' and name not in flags]
    values = {name: sa.bindparam('new_' + name) for name in columns}
    for name in kept:
        values[name] = sa.case(
            (sa.bindparam('keep_' + name, type_=sa.Boolean), table.c[name]),
            else_=values[name])
    statement = sa.update(table).where(
        table.c.id == sa.bindparam('row_id')).values(values)
    parameters = [dict({'new_' + name: row[name] for name in columns},
                       row_id=row['id'],
                       **{flag: bool(row.get(flag)) for flag in flags})
                  for row in rows]
    context.session.connection().execute(statement, parameters)


@db_api.writer
def delete_rows(context, table, row_ids):
    """Delete the rows of ``table`` with these ids; the database cascades."""
    for chunk in id_chunks(row_ids):
        context.session.connection().execute(
            sa.delete(table).where(table.c.id.in_(chunk)))


def id_chunks(row_ids):
    """``row_ids`` sorted (each once), in lists of at most IN_LIST_IDS."""
    ordered = sorted(set(row_ids))
    return [ordered[start:start + IN_LIST_IDS]
            for start in range(0, len(ordered), IN_LIST_IDS)]
