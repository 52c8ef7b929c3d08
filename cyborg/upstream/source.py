"""An OpenStack Cyborg database: its schema revision and its rows.

Only the revisions of openstack-cyborg 17.0.0's migration chain that have
every table and column the import reads are accepted (``ACCEPTED``: from
the one that added ``devices.status`` to 17.0.0's head). An older revision
of that chain, or one the chain does not know, is refused with its name.
The rows are read with plain SELECTs of the columns the import needs, so
a column upstream added later (``devices.device_state``) does not matter.
"""

import sqlalchemy as sa

# openstack-cyborg's alembic chain, oldest first (facts of its
# cyborg/db/sqlalchemy/alembic/versions).
CHAIN = (
    'f50980397351', 'd6f033d8fa5b', 'ede4e3f1a232', '589ff20545b7',
    'c1b5abada09c', '57539722e5cf', '22fb1af2d51e', '7b696fd94949',
    '62bcf2610c5d', '7a4fd0fc3f8c', '60d8ac91fd20', '7e6f1f107f2b',
    '899cead40bc9', '4cc1d79978fc', '6c77bd6afea5', '9625668549b5',
    'a35b4295a0e5', 'b47c8f2d1e3a',
)
# The head of openstack-cyborg 17.0.0.
HEAD = 'b47c8f2d1e3a'
# The oldest revision with everything the import reads: 6c77bd6afea5 adds
# devices.status (enabled/maintaining); device_profiles.description
# (60d8ac91fd20) and the ARQs' instance_uuid and the deployables' rp_uuid
# (c1b5abada09c) come before it.
OLDEST = '6c77bd6afea5'
ACCEPTED = CHAIN[CHAIN.index(OLDEST):]

# The columns read from each table, in the order the import writes them.
COLUMNS = {
    'devices': ('id', 'uuid', 'type', 'vendor', 'model', 'std_board_info',
                'vendor_board_info', 'hostname', 'status', 'created_at',
                'updated_at'),
    'controlpath_ids': ('id', 'uuid', 'device_id', 'cpid_type', 'cpid_info',
                        'created_at', 'updated_at'),
    'deployables': ('id', 'uuid', 'parent_id', 'root_id', 'name',
                    'num_accelerators', 'device_id', 'rp_uuid',
                    'driver_name', 'bitstream_id', 'created_at',
                    'updated_at'),
    'attributes': ('id', 'uuid', 'deployable_id', 'key', 'value',
                   'created_at', 'updated_at'),
    'attach_handles': ('id', 'uuid', 'deployable_id', 'cpid_id', 'in_use',
                       'attach_type', 'attach_info', 'created_at',
                       'updated_at'),
    'device_profiles': ('id', 'uuid', 'name', 'profile_json', 'description',
                        'created_at', 'updated_at'),
    'extended_accelerator_requests': (
        'id', 'uuid', 'project_id', 'state', 'device_profile_id',
        'device_profile_group_id', 'hostname', 'device_rp_uuid',
        'instance_uuid', 'attach_handle_id', 'deployable_id', 'created_at',
        'updated_at'),
}


class Refused(Exception):
    """The import will not run; the message says why, for the operator."""


def connect(url):
    """An engine on the upstream database at ``url`` (no pool: one read)."""
    try:
        return sa.create_engine(url, poolclass=sa.pool.NullPool)
    except (sa.exc.ArgumentError, ImportError) as error:
        raise Refused('Cannot use the source database URL: %s' % error)


def check_revision(connection):
    """Return the source's revision; raise Refused unless it is accepted."""
    inspector = sa.inspect(connection)
    if not inspector.has_table('alembic_version'):
        raise Refused('The source database has no alembic_version table: '
                      'it is not an OpenStack Cyborg database built by '
                      'its migrations.')
    revisions = connection.execute(
        sa.text('SELECT version_num FROM alembic_version')).scalars().all()
    if len(revisions) != 1:
        raise Refused('The source database has %d revisions in '
                      'alembic_version (%s); expected one.'
                      % (len(revisions), ', '.join(revisions) or 'none'))
    revision = revisions[0]
    if revision in ACCEPTED:
        return revision
    if revision in CHAIN:
        raise Refused(
            'The source database is at OpenStack Cyborg revision %s, older '
            'than %s (the first with every column the import reads): '
            'upgrade it with its own cyborg-dbsync (to %s, openstack-cyborg '
            '17.0.0) first.' % (revision, OLDEST, HEAD))
    raise Refused(
        'The source database is at revision %s, which is not one of '
        'OpenStack Cyborg\'s migrations up to %s (openstack-cyborg '
        '17.0.0): refusing to guess its schema.' % (revision, HEAD))


def read(connection):
    """Every row the import reads: {table: [row dict, ...]} in id order."""
    rows = {}
    for name, columns in COLUMNS.items():
        table = sa.table(name, *(sa.column(column) for column in columns))
        result = connection.execute(
            sa.select(*table.c).order_by(table.c.id))
        rows[name] = [dict(row._mapping) for row in result]
    return rows
