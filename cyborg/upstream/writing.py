"""The planned rows against the target database: compared, then written.

``apply`` runs in one writer transaction: it reads the target's rows
with the planned uuids, sorts the plan into rows to insert and rows
already there, and finds the conflicts: a row with a planned uuid but
other content (``COMPARED``: the columns and references that make a row
what it is, not those the services change as they run, such as an ARQ's
state or a handle's ``in_use``), a device profile name, a provider uuid
or a device (host and control path) that another row holds already, an
attach handle another ARQ holds. Any conflict refuses the whole import,
naming the rows; so does any error while writing, and the transaction
rolls back: the target is left as it was. A dry run stops after the
comparison.
"""

import collections

import sqlalchemy as sa

from cyborg.conductor import report_devices
from cyborg.db import api as db_api
from cyborg.db import models
from cyborg.db.queries import deployable_filters
from cyborg.db.queries import host_locks
from cyborg.db.queries import inventory
from cyborg.upstream import mapping
from cyborg.upstream import source

TABLES = {name: models.Base.metadata.tables[name] for name in mapping.TABLES}

# The columns (and references) whose values make a row the same row.
COMPARED = {
    'devices': ('hostname', 'type', 'vendor', 'model'),
    'controlpath_ids': ('device_id', 'cpid_type', 'cpid_info'),
    'deployables': ('device_id', 'rp_uuid'),
    'attributes': ('deployable_id', 'key', 'value'),
    'attach_handles': ('deployable_id', 'attach_type', 'attach_info'),
    'device_profiles': ('name', 'profile_json', 'description'),
    'extended_accelerator_requests': ('device_profile_id',
                                      'device_profile_group_id'),
}

# Uuids per IN list.
CHUNK = 1000


class Comparison:
    """The plan against the target: per table, new rows and rows there."""

    def __init__(self):
        self.new = {table: [] for table in mapping.TABLES}
        self.present = {table: 0 for table in mapping.TABLES}
        # Uuid -> id of the target's rows the plan names, per table.
        self.ids = {table: {} for table in mapping.TABLES}
        self.conflicts = []

    def nothing_to_do(self):
        return not any(self.new.values())


@db_api.writer
def apply(context, plan, dry_run=False):
    """Compare ``plan`` with the target and, unless ``dry_run``, write it.

    Returns the Comparison. :raises: source.Refused on conflicts (nothing
    written).
    """
    comparison = compare(context, plan)
    if comparison.conflicts:
        raise source.Refused(
            'The target database already holds rows that conflict with the '
            'import (nothing was written):\n  %s'
            % '\n  '.join(comparison.conflicts))
    if not dry_run:
        write(context, comparison)
    return comparison


def compare(context, plan):
    """The Comparison of ``plan`` with the target's rows.

    One query per table (and per CHUNK uuids) for the rows, one per
    referenced table for the uuids their foreign keys name: a second run
    over a large database costs a few dozen statements, not one per row.
    """
    comparison = Comparison()
    held = {}
    for table in mapping.TABLES:
        held[table] = _rows_by_uuid(context, table, [
            row.uuid for row in plan.rows[table]])
        comparison.ids[table] = {row_uuid: row['id']
                                 for row_uuid, row in held[table].items()}
    uuids = _referenced_uuids(context, held)
    for table in mapping.TABLES:
        for row in plan.rows[table]:
            stored = held[table].get(row.uuid)
            if stored is None:
                comparison.new[table].append(row)
                continue
            comparison.present[table] += 1
            different = _differences(row, stored, uuids)
            if different:
                comparison.conflicts.append(
                    '%s %s: the target\'s row differs in %s'
                    % (table, row.uuid, ', '.join(different)))
    comparison.conflicts.extend(_key_conflicts(context, comparison))
    return comparison


def _rows_by_uuid(context, table, uuids):
    model = TABLES[table]
    found = {}
    for start in range(0, len(uuids), CHUNK):
        for row in context.session.execute(sa.select(model).where(
                model.c.uuid.in_(uuids[start:start + CHUNK]))):
            found[row.uuid] = dict(row._mapping)
    return found


def _foreign_keys(table):
    """The compared columns of ``table`` that are foreign keys."""
    return [name for name in COMPARED[table]
            if TABLES[table].c[name].foreign_keys]


def _referenced_uuids(context, held):
    """{table: {id: uuid}} of the rows the held rows' compared foreign
    keys name."""
    wanted = collections.defaultdict(set)
    for table, rows in held.items():
        for name in _foreign_keys(table):
            wanted[_referenced(table, name)].update(
                row[name] for row in rows.values() if row[name] is not None)
    uuids = {}
    for table, row_ids in wanted.items():
        model, ordered = TABLES[table], sorted(row_ids)
        uuids[table] = {}
        for start in range(0, len(ordered), CHUNK):
            uuids[table].update(context.session.execute(sa.select(
                model.c.id, model.c.uuid).where(
                model.c.id.in_(ordered[start:start + CHUNK]))).all())
    return uuids


def _differences(planned, stored, uuids):
    """The compared columns where ``stored`` is not ``planned``."""
    different = []
    for name in COMPARED[planned.table]:
        if name in _foreign_keys(planned.table):
            want = planned.refs.get(name, (None, None))[1]
            have = uuids.get(_referenced(planned.table, name), {}).get(
                stored[name])
        else:
            want = mapping.canonical(planned.table, name,
                                     planned.values[name])
            have = mapping.canonical(planned.table, name, stored[name])
        if want != have:
            different.append(name)
    return different


def _referenced(table, column):
    """The table a foreign key column of ``table`` points at."""
    (foreign_key,) = TABLES[table].c[column].foreign_keys
    return foreign_key.column.table.name


def _key_conflicts(context, comparison):
    """Rows the target holds under another uuid that new rows would take."""
    conflicts = []
    new = comparison.new
    names = {row.values['name']: row.uuid for row in new['device_profiles']}
    profiles = TABLES['device_profiles']
    for name, held_by in context.session.execute(sa.select(
            profiles.c.name, profiles.c.uuid).where(
            profiles.c.name.in_(list(names)))):
        conflicts.append('device_profiles %s: its name %r is taken by the '
                         'target\'s profile %s' % (names[name], name,
                                                   held_by))
    providers = {row.values['rp_uuid']: row.uuid for row in new['deployables']
                 if row.values['rp_uuid']}
    deployables = TABLES['deployables']
    for rp_uuid, held_by in context.session.execute(sa.select(
            deployables.c.rp_uuid, deployables.c.uuid).where(
            deployables.c.rp_uuid.in_(list(providers)))):
        conflicts.append('deployables %s: its resource provider %s is the '
                         'target\'s deployable %s\'s' % (
                             providers[rp_uuid], rp_uuid, held_by))
    conflicts.extend(_device_conflicts(context, comparison))
    conflicts.extend(_handle_conflicts(context, comparison))
    return conflicts


def _device_conflicts(context, comparison):
    """New devices that the target holds under another uuid (same host
    and control path): this service's agent reported them already."""
    hosts = {row.uuid: row.values['hostname']
             for row in comparison.new['devices']}
    wanted = {(hosts[row.refs['device_id'][1]], row.values['cpid_type'],
               report_devices.canonical_text(row.values['cpid_info'])):
              row.refs['device_id'][1]
              for row in comparison.new['controlpath_ids']
              if row.refs['device_id'][1] in hosts}
    if not wanted:
        return []
    devices, cpids = TABLES['devices'], TABLES['controlpath_ids']
    found = context.session.execute(sa.select(
        devices.c.uuid, devices.c.hostname, cpids.c.cpid_type,
        cpids.c.cpid_info).join(cpids, cpids.c.device_id == devices.c.id)
        .where(devices.c.hostname.in_(set(hosts.values()))))
    conflicts = []
    for held_by, host, cpid_type, cpid_info in found:
        key = (host, cpid_type, report_devices.canonical_text(cpid_info))
        if key in wanted:
            conflicts.append(
                'devices %s: the target\'s device %s on host %s has the same '
                'control path %s %s' % (wanted[key], held_by, host, cpid_type,
                                        cpid_info))
    return conflicts


def _handle_conflicts(context, comparison):
    """New ARQs whose attach handle, already in the target, another
    ARQ holds there."""
    handle_ids = comparison.ids['attach_handles']
    wanted = {handle_ids[row.refs['attach_handle_id'][1]]: row.uuid
              for row in comparison.new['extended_accelerator_requests']
              if 'attach_handle_id' in row.refs
              and row.refs['attach_handle_id'][1] in handle_ids}
    if not wanted:
        return []
    arqs = TABLES['extended_accelerator_requests']
    return ['extended_accelerator_requests %s: its attach handle is held by '
            'the target\'s ARQ %s' % (wanted[handle_id], held_by)
            for handle_id, held_by in context.session.execute(sa.select(
                arqs.c.attach_handle_id, arqs.c.uuid).where(
                arqs.c.attach_handle_id.in_(list(wanted))))]


def write(context, comparison):
    """Insert the new rows, table by table, in the caller's transaction."""
    for table in mapping.TABLES:
        pending = list(comparison.new[table])
        # Deployables name others of their table: a level at a time.
        while pending:
            ready = [row for row in pending
                     if all(ref[1] in comparison.ids[ref[0]]
                            for ref in row.refs.values())]
            if not ready:
                raise source.Refused('%s %s names a row that is not written'
                                     % (table, pending[0].uuid))
            comparison.ids[table].update(_insert(context, table, [
                _resolved(row, comparison.ids) for row in ready]))
            written = {row.uuid for row in ready}
            pending = [row for row in pending if row.uuid not in written]
    deployable_filters.refresh_attributes_list(context, {
        comparison.ids['deployables'][row.refs['deployable_id'][1]]
        for row in comparison.new['attributes']})
    for host in {row.values['hostname'] for row in comparison.new['devices']}:
        host_locks.forget(context, host)


def _resolved(row, ids):
    """The row's values with its references as ids (NULL where none), so
    that every row of a table has the same columns (one INSERT)."""
    values = dict(row.values)
    for column in TABLES[row.table].c:
        if column.foreign_keys:
            values[column.name] = None
    for column, (table, row_uuid) in row.refs.items():
        values[column] = ids[table][row_uuid]
    return values


def _insert(context, table, rows):
    """Insert ``rows`` into ``table``; return {uuid: id}."""
    return inventory.insert_rows(context, TABLES[table], rows)


def counts(comparison, plan):
    """Per table: (to insert, already there, not carried)."""
    skipped = collections.Counter(row.table for row in plan.skipped)
    return {table: (len(comparison.new[table]), comparison.present[table],
                    skipped[table]) for table in mapping.TABLES}
