"""SQLAlchemy models: the tables cyborg keeps.

The alembic migrations in ``cyborg/db/migrations`` create exactly these
tables; ``cyborg/tests/functional/db/test_migrations.py`` fails when the two
drift apart. Every column the API filters or sorts on has an index.
"""

import datetime

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.dialects import mysql

from cyborg.common import columns
from cyborg.common import vocabulary


# Every timestamp column: naive UTC with microseconds on every backend.
# MariaDB's and MySQL's plain DATETIME drops the fraction of a second, so
# there it is DATETIME(6) (migration e7c3a9b5d1f4); PostgreSQL's timestamp
# and SQLite's text keep microseconds already.
Timestamp = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql', 'mariadb')


def utcnow():
    """Now as the models keep timestamps: naive UTC."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _one_of(column, values):
    """The text of a CHECK constraint: ``column`` holds one of ``values``."""
    return '%s IN (%s)' % (column, ', '.join("'%s'" % value
                                             for value in values))


class Base(orm.DeclarativeBase):
    """Declarative base; every table carries created_at/updated_at."""

    created_at = orm.mapped_column(Timestamp, nullable=False, default=utcnow)
    updated_at = orm.mapped_column(Timestamp, nullable=True, onupdate=utcnow)


# Every string column compares exactly on MariaDB and MySQL too, as on SQLite
# and PostgreSQL: case and trailing spaces count, in filters and unique keys.
# Their default collations ignore both, so each table is utf8mb4 with a
# binary NO PAD collation (migration 007eb4efa142). Its name differs between
# servers, so it is chosen when the tables are created: the first of these
# the server has (MariaDB, then MySQL 8.0.17 and later).
MYSQL_CHARSET = 'utf8mb4'
MYSQL_BINARY_COLLATIONS = ('utf8mb4_nopad_bin', 'utf8mb4_0900_bin')


def mysql_binary_collation(connection):
    """The binary NO PAD utf8mb4 collation of a MariaDB or MySQL server.

    :raises: RuntimeError when the server has none (MySQL before 8.0.17).
    """
    available = set(connection.execute(sa.text(
        "SHOW COLLATION WHERE Charset = '%s'" % MYSQL_CHARSET)).scalars())
    for collation in MYSQL_BINARY_COLLATIONS:
        if collation in available:
            return collation
    raise RuntimeError('the database server has none of the collations %s'
                       % ', '.join(MYSQL_BINARY_COLLATIONS))


@sa.event.listens_for(Base.metadata, 'before_create')
def _collate_exactly(metadata, connection, tables=(), **kw):
    """Give the tables that create_all makes on MariaDB/MySQL the binary collation."""
    dialect = connection.dialect.name
    if dialect not in ('mysql', 'mariadb'):
        return
    collation = mysql_binary_collation(connection)
    for table in tables:
        table.dialect_options[dialect]['charset'] = MYSQL_CHARSET
        table.dialect_options[dialect]['collate'] = collation


# Text of any length a deployable's attributes may reach: LONGTEXT on
# MariaDB and MySQL, whose TEXT stops at 64 KiB.
AttributesText = sa.Text().with_variant(mysql.LONGTEXT(), 'mysql', 'mariadb')

# Shared column sizes.
UUID_LEN = columns.UUID_LENGTH
NAME_LEN = columns.NAME_LENGTH
HOST_LEN = columns.HOST_LENGTH


def _typed(table):
    """The SQL type of each column of ``table`` (its object's name), from
    the limits that the API bounds request values by
    (``cyborg.common.columns``)."""

    def column_type(name):
        limits = columns.of(table, name)
        if limits.max_bytes is not None:
            return sa.Text
        if limits.max_length is not None:
            return sa.String(limits.max_length)
        return sa.Integer

    return column_type


_devices = _typed('Device')
_deployables = _typed('Deployable')
_attributes = _typed('Attribute')
_device_profiles = _typed('DeviceProfile')
_arqs = _typed('ARQ')


class Device(Base):
    """A physical accelerator card on one host."""

    __tablename__ = 'devices'
    __table_args__ = (
        sa.Index('devices_hostname_idx', 'hostname'),
        sa.Index('devices_type_idx', 'type'),
        sa.Index('devices_vendor_idx', 'vendor'),
        sa.Index('devices_status_idx', 'status'),
        sa.Index('devices_health_idx', 'health'),
    )

    id = orm.mapped_column(_devices('id'), primary_key=True)
    uuid = orm.mapped_column(_devices('uuid'), nullable=False, unique=True)
    type = orm.mapped_column(_devices('type'), nullable=False)
    vendor = orm.mapped_column(_devices('vendor'), nullable=False)
    model = orm.mapped_column(_devices('model'), nullable=False)
    std_board_info = orm.mapped_column(
        _devices('std_board_info'), nullable=True)
    vendor_board_info = orm.mapped_column(
        _devices('vendor_board_info'), nullable=True)
    hostname = orm.mapped_column(_devices('hostname'), nullable=False)
    status = orm.mapped_column(_devices('status'), nullable=False,
                               default=vocabulary.DeviceStatus.ENABLED)
    status_reason = orm.mapped_column(_devices('status_reason'), nullable=True)
    # Health (cyborg.common.vocabulary.Health) as the driver's reports
    # and the conductor's checks left it, why and since when;
    # ``healthy_reports`` counts the healthy reports in a row since the last
    # fault (recovery). ``drain_since``: when an operator asked that no new
    # bind land here, NULL when not drained.
    health = orm.mapped_column(_devices('health'), nullable=False,
                               default=vocabulary.Health.HEALTHY,
                               server_default=vocabulary.Health.HEALTHY)
    health_reason = orm.mapped_column(_devices('health_reason'), nullable=True)
    health_since = orm.mapped_column(Timestamp, nullable=True)
    healthy_reports = orm.mapped_column(
        _devices('healthy_reports'), nullable=False, default=0,
        server_default='0')
    drain_since = orm.mapped_column(Timestamp, nullable=True)


class Deployable(Base):
    """A programmable or assignable part of a device, in a tree.

    ``root_id`` points at the tree's root (the deployable standing for the
    whole device) and ``parent_id`` at the node directly above; both are
    NULL on a root. Each deployable that offers accelerators is one
    resource provider in Placement, named by ``rp_uuid``.
    """

    __tablename__ = 'deployables'
    __table_args__ = (
        sa.Index('deployables_device_id_idx', 'device_id'),
        sa.Index('deployables_parent_id_idx', 'parent_id'),
        sa.Index('deployables_root_id_idx', 'root_id'),
        sa.Index('deployables_driver_name_idx', 'driver_name'),
        sa.Index('deployables_bitstream_id_idx', 'bitstream_id'),
        sa.Index('deployables_health_idx', 'health'),
    )

    id = orm.mapped_column(_deployables('id'), primary_key=True)
    uuid = orm.mapped_column(_deployables('uuid'), nullable=False, unique=True)
    parent_id = orm.mapped_column(
        _deployables('parent_id'),
        sa.ForeignKey('deployables.id', ondelete='CASCADE'),
        nullable=True)
    root_id = orm.mapped_column(
        _deployables('root_id'),
        sa.ForeignKey('deployables.id', ondelete='CASCADE'),
        nullable=True)
    name = orm.mapped_column(_deployables('name'), nullable=False)
    num_accelerators = orm.mapped_column(
        _deployables('num_accelerators'), nullable=False, default=0)
    device_id = orm.mapped_column(
        _deployables('device_id'),
        sa.ForeignKey('devices.id', ondelete='CASCADE'),
        nullable=False)
    driver_name = orm.mapped_column(_deployables('driver_name'), nullable=True)
    rp_uuid = orm.mapped_column(
        _deployables('rp_uuid'), nullable=True, unique=True)
    bitstream_id = orm.mapped_column(
        _deployables('bitstream_id'), nullable=True)
    # The programming lock (cyborg.conductor.programming): the request
    # programming this deployable (host/pid/nonce) and until when, NULL when
    # none is. Taken by a compare-and-set; once it has run out (its
    # conductor died: [conductor] program_timeout is over) another request
    # may take it, and binds no longer see it.
    programming_owner = orm.mapped_column(
        _deployables('programming_owner'), nullable=True)
    programming_expires_at = orm.mapped_column(Timestamp, nullable=True)
    # Health (cyborg.common.vocabulary.Health) as the device's reports
    # and the conductor's checks left it, why and since when;
    # ``healthy_reports`` counts the healthy reports in a row since the last
    # fault (recovery). ``drain_since``: when an operator asked that no new
    # bind land here, NULL when not drained.
    health = orm.mapped_column(_deployables('health'), nullable=False,
                               default=vocabulary.Health.HEALTHY,
                               server_default=vocabulary.Health.HEALTHY)
    health_reason = orm.mapped_column(_deployables('health_reason'),
                                      nullable=True)
    health_since = orm.mapped_column(Timestamp, nullable=True)
    healthy_reports = orm.mapped_column(
        _deployables('healthy_reports'), nullable=False, default=0,
        server_default='0')
    drain_since = orm.mapped_column(Timestamp, nullable=True)
    # A derived copy of the deployable's attributes, kept by the attribute
    # writers so that a list reads one column instead of aggregating the
    # attributes table per row: ``attributes_list`` is the JSON text the API
    # shows (``[{"key": "value"}, ...]`` in attribute-id order, NULL when it
    # has none) and ``has_nested_attributes`` whether one is nested under
    # another. Every writer of the attributes table refreshes both in its
    # own transaction (``deployable_filters.refresh_attributes_list``); the
    # API and the objects never show them. LONGTEXT on MariaDB and MySQL:
    # TEXT holds 64 KiB there, what one attribute's value may take alone.
    # Deferred: an ORM load of a deployable (the objects) does not read it.
    attributes_list = orm.mapped_column(AttributesText, nullable=True,
                                        deferred=True)
    has_nested_attributes = orm.mapped_column(
        sa.Boolean, nullable=False, default=False, server_default=sa.false())
    # The name of the resource provider this deployable adopted from an
    # OpenStack Cyborg deployment (``cyborg.upstream``), which Nova's
    # allocations and flavors know it by; NULL for a provider this service
    # named (``<host>_<name>``). Internal: neither objects nor the API
    # show it (``cyborg.conductor.placement_sync`` reads it).
    provider_name = orm.mapped_column(_deployables('provider_name'),
                                      nullable=True)


# The columns of Deployable that are a copy of its attributes: no API,
# object, filter or sort key shows them.
DEPLOYABLE_DERIVED_COLUMNS = ('attributes_list', 'has_nested_attributes')


class Attribute(Base):
    """A key/value fact about a deployable; nestable through parent_attribute_id."""

    __tablename__ = 'attributes'
    __table_args__ = (
        sa.Index('attributes_deployable_id_key_idx', 'deployable_id', 'key'),
        sa.Index('attributes_key_idx', 'key'),
        sa.Index('attributes_parent_attribute_id_idx', 'parent_attribute_id'),
    )

    id = orm.mapped_column(_attributes('id'), primary_key=True)
    uuid = orm.mapped_column(_attributes('uuid'), nullable=False, unique=True)
    deployable_id = orm.mapped_column(
        _attributes('deployable_id'),
        sa.ForeignKey('deployables.id', ondelete='CASCADE'),
        nullable=False)
    parent_attribute_id = orm.mapped_column(
        _attributes('parent_attribute_id'),
        sa.ForeignKey('attributes.id', ondelete='CASCADE'),
        nullable=True)
    key = orm.mapped_column(_attributes('key'), nullable=False)
    value = orm.mapped_column(_attributes('value'), nullable=True)


class ControlpathID(Base):
    """How the host's driver reaches a device (for example its PCI address)."""

    __tablename__ = 'controlpath_ids'
    __table_args__ = (
        sa.UniqueConstraint('device_id', 'cpid_type', 'cpid_info',
                            name='controlpath_ids_device_type_info_uc'),
    )

    id = orm.mapped_column(sa.Integer, primary_key=True)
    uuid = orm.mapped_column(sa.String(UUID_LEN), nullable=False, unique=True)
    device_id = orm.mapped_column(
        sa.Integer, sa.ForeignKey('devices.id', ondelete='CASCADE'),
        nullable=False)
    cpid_type = orm.mapped_column(sa.String(30), nullable=False)
    cpid_info = orm.mapped_column(sa.String(255), nullable=False)


class AttachHandle(Base):
    """What Nova attaches to an instance: a PCI function or a mediated device."""

    __tablename__ = 'attach_handles'
    __table_args__ = (
        sa.Index('attach_handles_deployable_id_in_use_idx',
                 'deployable_id', 'in_use'),
        sa.UniqueConstraint('deployable_id', 'attach_type', 'attach_info',
                            name='attach_handles_deployable_type_info_uc'),
        sa.CheckConstraint(_one_of('attach_type', vocabulary.AttachHandleType.ALL),
                           name='attach_handles_attach_type_ck'),
    )

    id = orm.mapped_column(sa.Integer, primary_key=True)
    uuid = orm.mapped_column(sa.String(UUID_LEN), nullable=False, unique=True)
    deployable_id = orm.mapped_column(
        sa.Integer, sa.ForeignKey('deployables.id', ondelete='CASCADE'),
        nullable=False)
    cpid_id = orm.mapped_column(
        sa.Integer, sa.ForeignKey('controlpath_ids.id', ondelete='CASCADE'),
        nullable=False)
    attach_type = orm.mapped_column(sa.String(30), nullable=False)
    # JSON text, e.g. {"bus": "0c", "device": "00", "domain": "0000", "function": "1"}.
    attach_info = orm.mapped_column(sa.String(255), nullable=False)
    in_use = orm.mapped_column(sa.Boolean, nullable=False, default=False)


class DeviceProfile(Base):
    """A named request for accelerators, used by Nova flavors."""

    __tablename__ = 'device_profiles'

    id = orm.mapped_column(_device_profiles('id'), primary_key=True)
    uuid = orm.mapped_column(
        _device_profiles('uuid'), nullable=False, unique=True)
    name = orm.mapped_column(
        _device_profiles('name'), nullable=False, unique=True)
    description = orm.mapped_column(
        _device_profiles('description'), nullable=True)
    # JSON text: the list of request groups, each a string-to-string map.
    profile_json = orm.mapped_column(
        _device_profiles('profile_json'), nullable=False)


class ARQ(Base):
    """An accelerator request (ARQ): one accelerator for one instance.

    ``attach_handle_id`` is unique: one attach handle can belong to at most
    one ARQ, so a double allocation fails in the database itself whatever
    the code above it does.

    The ``bind_*`` columns are the conductor's bookkeeping of bind work
    (``cyborg.conductor.binder``): which binder holds an ARQ in
    BindStarted and until when (a lease it renews while it works, so that
    another conductor takes over when it dies), and whether Nova still has
    to be told that the ARQ left BindStarted.
    """

    __tablename__ = 'extended_accelerator_requests'
    __table_args__ = (
        sa.Index('arqs_instance_uuid_idx', 'instance_uuid'),
        sa.Index('arqs_project_id_idx', 'project_id'),
        sa.Index('arqs_state_idx', 'state'),
        sa.Index('arqs_device_profile_id_idx', 'device_profile_id'),
        sa.Index('arqs_deployable_id_idx', 'deployable_id'),
        sa.Index('arqs_hostname_idx', 'hostname'),
        sa.Index('arqs_bind_owner_idx', 'bind_owner'),
        sa.UniqueConstraint('attach_handle_id', name='arqs_attach_handle_id_uc'),
        sa.CheckConstraint(_one_of('state', vocabulary.ARQState.ALL),
                           name='arqs_state_ck'),
    )

    id = orm.mapped_column(_arqs('id'), primary_key=True)
    uuid = orm.mapped_column(_arqs('uuid'), nullable=False, unique=True)
    state = orm.mapped_column(_arqs('state'), nullable=False,
                              default=vocabulary.ARQState.INITIAL)
    device_profile_id = orm.mapped_column(
        _arqs('device_profile_id'),
        sa.ForeignKey('device_profiles.id'), nullable=False)
    device_profile_group_id = orm.mapped_column(
        _arqs('device_profile_group_id'), nullable=False)
    hostname = orm.mapped_column(_arqs('hostname'), nullable=True)
    device_rp_uuid = orm.mapped_column(_arqs('device_rp_uuid'), nullable=True)
    instance_uuid = orm.mapped_column(_arqs('instance_uuid'), nullable=True)
    project_id = orm.mapped_column(_arqs('project_id'), nullable=True)
    attach_handle_id = orm.mapped_column(
        _arqs('attach_handle_id'),
        sa.ForeignKey('attach_handles.id', ondelete='SET NULL'),
        nullable=True)
    deployable_id = orm.mapped_column(
        _arqs('deployable_id'),
        sa.ForeignKey('deployables.id', ondelete='SET NULL'),
        nullable=True)
    # One lease, two uses. In BindStarted, ``bind_owner`` names the binder
    # (host/pid/nonce) doing the bind until ``bind_lease_expires_at``; a
    # binder renews it while it works and another takes the bind over once
    # it has run out. Once the bind has ended (Bound or BindFailed) with
    # ``bind_event_pending`` set, the same two columns are the lease on
    # sending Nova the ARQ's event: its sender, or ``sweep``, holds them
    # until Nova has the event (pending cleared) or the lease runs out and
    # a sweep sends it again.
    bind_owner = orm.mapped_column(_arqs('bind_owner'), nullable=True)
    bind_lease_expires_at = orm.mapped_column(Timestamp, nullable=True)
    # Nova is owed the event of this ARQ's last bind.
    bind_event_pending = orm.mapped_column(sa.Boolean, nullable=True)
    # Why the ARQ is in its state: what made its last bind fail (BindFailed),
    # NULL otherwise.
    state_reason = orm.mapped_column(_arqs('state_reason'), nullable=True)
    # Who asked for the ARQ's last bind (the bind PATCH's or os-acc plug's
    # caller: user, project, request id), kept with the bind work so that
    # the history entry written when the bind ends, by whichever binder,
    # names them (cyborg.db.queries.history.append_for_arqs). Set when a
    # bind is recorded, cleared by an unbind; internal, never shown.
    bind_user_id = orm.mapped_column(_arqs('bind_user_id'), nullable=True)
    bind_project_id = orm.mapped_column(_arqs('bind_project_id'),
                                        nullable=True)
    bind_request_id = orm.mapped_column(_arqs('bind_request_id'),
                                        nullable=True)


class Service(Base):
    """A running cyborg service process and its last heartbeat."""

    __tablename__ = 'services'
    __table_args__ = (
        sa.UniqueConstraint('host', 'binary', name='services_host_binary_uc'),
    )

    id = orm.mapped_column(sa.Integer, primary_key=True)
    host = orm.mapped_column(sa.String(HOST_LEN), nullable=False)
    binary = orm.mapped_column(sa.String(64), nullable=False)
    topic = orm.mapped_column(sa.String(255), nullable=True)
    report_count = orm.mapped_column(sa.Integer, nullable=False, default=0)
    last_seen_up = orm.mapped_column(Timestamp, nullable=True)


class HostLock(Base):
    """A row per host whose lock makes that host's inventory reports take turns.

    ``cyborg.conductor.inventory_report`` creates or locks the row first
    thing in a report's transaction, so a second report of the host waits
    until the first has committed; an attribute written through the API
    (``cyborg.conductor.attributes``) takes the same lock, so that the
    host's attribute writers take turns. ``host`` is the primary key:
    MariaDB then locks just that index record, never a gap that another
    host's first report would insert into. ``updated_at`` is when the
    host's last applied report began (an API write only locks the row).
    ``report_digest`` is the digest of the host's last applied report
    when it left nothing to count or keep, and ``report_synced_at`` when
    Placement was last brought in step after it: an identical report
    within ``[conductor] report_resync_interval`` of that is skipped
    (``cyborg.conductor.report_digest``). A writer that changes what a
    report would write back clears the digest (``host_locks.forget``).
    """

    __tablename__ = 'host_locks'

    host = orm.mapped_column(sa.String(HOST_LEN), primary_key=True)
    report_digest = orm.mapped_column(sa.String(64), nullable=True)
    report_synced_at = orm.mapped_column(Timestamp, nullable=True)


_history = _typed('HistoryEntry')
# A big integer that SQLite, whose only autoincrementing key is INTEGER
# PRIMARY KEY (64 bits there), still numbers by itself.
BigId = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


class HistoryEntry(Base):
    """One change of a device or deployable, appended, never changed.

    Written by the conductor in the transaction of the change it records
    (``cyborg.conductor.history``); ``id`` is the order. The ids of the
    device and deployable are plain columns, not foreign keys: history
    outlives a removed device, and its uuids are kept beside them.
    ``arq_project_id`` is the project of the ARQ of a bind or unbind (who
    of a project may read the entry); ``user_id``, ``project_id`` and
    ``request_id`` are the caller's, ``agent`` the host of an event no
    caller asked for. ``updated_at`` stays NULL.
    """

    __tablename__ = 'device_history'
    __table_args__ = (
        sa.Index('device_history_device_id_idx', 'device_id', 'id'),
        sa.Index('device_history_deployable_id_idx', 'deployable_id', 'id'),
        sa.Index('device_history_device_uuid_idx', 'device_uuid', 'id'),
        sa.Index('device_history_deployable_uuid_idx', 'deployable_uuid',
                 'id'),
        sa.Index('device_history_created_at_idx', 'created_at'),
    )

    id = orm.mapped_column(BigId, primary_key=True, autoincrement=True)
    device_id = orm.mapped_column(_history('device_id'), nullable=True)
    deployable_id = orm.mapped_column(_history('deployable_id'),
                                      nullable=True)
    device_uuid = orm.mapped_column(_history('device_uuid'), nullable=True)
    deployable_uuid = orm.mapped_column(_history('deployable_uuid'),
                                        nullable=True)
    event = orm.mapped_column(_history('event'), nullable=False)
    outcome = orm.mapped_column(_history('outcome'), nullable=False)
    reason = orm.mapped_column(_history('reason'), nullable=True)
    image_id = orm.mapped_column(_history('image_id'), nullable=True)
    image_hash = orm.mapped_column(_history('image_hash'), nullable=True)
    arq_uuid = orm.mapped_column(_history('arq_uuid'), nullable=True)
    instance_uuid = orm.mapped_column(_history('instance_uuid'),
                                      nullable=True)
    arq_project_id = orm.mapped_column(_history('arq_project_id'),
                                       nullable=True)
    user_id = orm.mapped_column(_history('user_id'), nullable=True)
    project_id = orm.mapped_column(_history('project_id'), nullable=True)
    request_id = orm.mapped_column(_history('request_id'), nullable=True)
    agent = orm.mapped_column(_history('agent'), nullable=True)
