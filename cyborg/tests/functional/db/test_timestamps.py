"""Timestamps keep their microseconds on SQLite, MariaDB and PostgreSQL.

The binder counts ``[conductor] bind_timeout`` from an ARQ's ``updated_at``
and compares leases with ``bind_lease_expires_at``; a backend that cut
them to the whole second (MariaDB's plain DATETIME) made binds time out
and leases expire up to a second early. These tests write values with a
fraction of a second into every timestamp column, read them back, and run
the binder's time comparisons within one second.
"""

import datetime

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql

from cyborg import context as cyborg_context
from cyborg.conductor import inventory_report
from cyborg.db import models
from cyborg.db.queries import arq_binding as arq_binding_queries
from cyborg.db.queries import history as history_queries
from cyborg.db.queries import services as services_queries
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.db import records

ARQ = models.ARQ.__table__
# A moment with a fraction of a second, and offsets within that second.
MOMENT = datetime.datetime(2026, 11, 23, 2, 30, 15, 700000)
TENTHS = datetime.timedelta(milliseconds=200)


def _timestamp_columns(table):
    return [column for column in table.columns
            if column.type._type_affinity is sa.DateTime]


class TimestampValuesTestMixin:
    """Values written with microseconds come back and compare unchanged."""

    backend = None

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(self.backend))
        self.context = cyborg_context.get_admin_context()

    def _select_one(self, statement):
        with self.database.engine.connect() as connection:
            return connection.execute(statement).one()

    def test_every_timestamp_column_keeps_microseconds(self):
        # A row in every table.
        records.DeviceTree(self.context, handles=1)
        records.make_arq(self.context, records.make_device_profile(self.context))
        services_queries.record_heartbeat(self.context, 'host-1', 'cyborg-agent',
                                          'cyborg-agent', MOMENT)
        # An (empty) inventory report writes the host's lock row.
        inventory_report.apply(self.context, 'host-1', [])
        history_queries.append(self.context, [{
            'created_at': MOMENT, 'event': 'enable', 'outcome': 'ok'}])
        written = {}
        with self.database.engine.begin() as connection:
            for table in models.Base.metadata.sorted_tables:
                values = {column.name: MOMENT + datetime.timedelta(
                    microseconds=number * 1111)
                    for number, column in enumerate(_timestamp_columns(table), 1)}
                connection.execute(sa.update(table).values(values))
                written[table.name] = values

        for table in models.Base.metadata.sorted_tables:
            columns = _timestamp_columns(table)
            row = self._select_one(sa.select(*columns))
            self.assertEqual(written[table.name], dict(row._mapping), table.name)
        self.assertEqual(
            {'created_at', 'updated_at', 'bind_lease_expires_at', 'last_seen_up',
             'programming_expires_at', 'health_since', 'drain_since',
             'report_synced_at'},
            {column.name for table in models.Base.metadata.sorted_tables
             for column in _timestamp_columns(table)})

    def test_heartbeat_keeps_microseconds(self):
        services_queries.record_heartbeat(self.context, 'host-1', 'cyborg-agent',
                                          'cyborg-agent', MOMENT)
        later = MOMENT + datetime.timedelta(microseconds=123)
        services_queries.record_heartbeat(self.context, 'host-1', 'cyborg-agent',
                                          'cyborg-agent', later)

        row = self._select_one(sa.select(
            models.Service.created_at, models.Service.updated_at,
            models.Service.last_seen_up))
        self.assertEqual((MOMENT, later, later), tuple(row))

    def _bind_started_at(self, moment, **values):
        """An ARQ in BindStarted whose bind was recorded at ``moment``."""
        arq = records.make_arq(self.context,
                               records.make_device_profile(self.context))
        with self.database.engine.begin() as connection:
            connection.execute(sa.update(ARQ).where(ARQ.c.id == arq.id).values(
                state='BindStarted', updated_at=moment, **values))
        return arq

    def test_bind_times_out_only_after_its_fraction_of_a_second(self):
        arq = self._bind_started_at(MOMENT)

        # The bind started 0.2 s after this cutoff, in the same second.
        self.assertEqual([], arq_binding_queries.binds_started_before(
            self.context, MOMENT - TENTHS))
        self.assertEqual([arq.uuid], [
            item['uuid'] for item in arq_binding_queries.binds_started_before(
                self.context, MOMENT + TENTHS)])

    def test_lease_expires_only_after_its_fraction_of_a_second(self):
        arq = self._bind_started_at(MOMENT - datetime.timedelta(minutes=5),
                                    bind_owner='conductor-1',
                                    bind_lease_expires_at=MOMENT)
        long_ago = MOMENT - datetime.timedelta(hours=1)

        self.assertEqual([], arq_binding_queries.orphaned_binds(
            self.context, MOMENT - TENTHS, long_ago))
        self.assertEqual([(arq.uuid, None)], arq_binding_queries.orphaned_binds(
            self.context, MOMENT + TENTHS, long_ago))
        # Another binder cannot take the lease before it runs out.
        self.assertEqual(0, arq_binding_queries.take_leases(
            self.context, [arq.uuid], 'conductor-2', MOMENT + TENTHS,
            MOMENT - TENTHS))
        self.assertEqual(1, arq_binding_queries.take_leases(
            self.context, [arq.uuid], 'conductor-2', MOMENT + 2 * TENTHS,
            MOMENT + TENTHS))


class TimestampTypesTestMixin:
    """The migrations give every column the models' type, precision included.

    oslo.db's models/migrations comparison (``test_migrations``) lets a
    DATETIME pass for a DATETIME(6): alembic compares type arguments only
    when both sides have some. Here the column types of a migrated database
    and of one built from the models must be identical, and every
    timestamp column must store microseconds.
    """

    backend = None

    def _columns(self, schema):
        engine = self.useFixture(database.Database(self.backend, schema)).engine
        inspector = sa.inspect(engine)
        return {(table, column['name']): (
                    column['type'].compile(dialect=engine.dialect),
                    column['nullable'], column['type'])
                for table in models.Base.metadata.tables
                for column in inspector.get_columns(table)}

    def test_migrated_column_types_are_the_models(self):
        migrated = self._columns('migrations')
        created = self._columns('models')

        self.assertEqual(
            {key: value[:2] for key, value in created.items()},
            {key: value[:2] for key, value in migrated.items()})

    def test_timestamp_columns_store_microseconds(self):
        migrated = self._columns('migrations')

        for table in models.Base.metadata.sorted_tables:
            for column in _timestamp_columns(table):
                reflected = migrated[(table.name, column.name)][2]
                self.assertTrue(self.stores_microseconds(reflected),
                                '%s.%s is %r' % (table.name, column.name,
                                                 reflected))

    def stores_microseconds(self, reflected):
        raise NotImplementedError()


class SQLiteTimestampValuesTest(TimestampValuesTestMixin, base.TestCase):
    backend = 'sqlite'


class MySQLTimestampValuesTest(TimestampValuesTestMixin, base.TestCase):
    backend = 'mysql'


class PostgreSQLTimestampValuesTest(TimestampValuesTestMixin, base.TestCase):
    backend = 'postgresql'


class SQLiteTimestampTypesTest(TimestampTypesTestMixin, base.TestCase):
    backend = 'sqlite'

    def stores_microseconds(self, reflected):
        # SQLAlchemy stores SQLite's DATETIME as text with microseconds.
        return isinstance(reflected, sa.DateTime)


class MySQLTimestampTypesTest(TimestampTypesTestMixin, base.TestCase):
    backend = 'mysql'

    def stores_microseconds(self, reflected):
        return (isinstance(reflected, mysql.DATETIME)
                and reflected.fsp == 6)


class PostgreSQLTimestampTypesTest(TimestampTypesTestMixin, base.TestCase):
    backend = 'postgresql'

    def stores_microseconds(self, reflected):
        # timestamp without a precision keeps microseconds.
        return (isinstance(reflected, postgresql.TIMESTAMP)
                and not reflected.timezone
                and reflected.precision in (None, 6))
