"""Upgrading a database of the first release's schema keeps its rows.

The first schema (revision ``FIRST``) is filled with a small fleet as the
first release wrote it: a device with its root deployable and a region, an
attribute tree, a control path, two attach handles, a device profile, an
ARQ in each state that holds data, and a heartbeat. The database is then
upgraded to head; every row keeps every value it had, every table keeps
its row count, and the versioned objects of head read all of it.
Run on SQLite, MariaDB and PostgreSQL.
"""

import datetime
import json

import sqlalchemy as sa
from alembic import command

from cyborg import context as cyborg_context
from cyborg import objects
from cyborg.db import migration
from cyborg.db.queries import deployable_filters
from cyborg.tests import base
from cyborg.tests.fixtures import database

FIRST = 'c1f7a5e3b2d0'
# The revision before deployables.attributes_list (2efde3974ce5).
BEFORE_ATTRIBUTES_LIST = '007eb4efa142'
# Whole seconds: the first schema's DATETIME has none on MariaDB.
CREATED = datetime.datetime(2026, 3, 1, 8, 30, 0)
UPDATED = datetime.datetime(2026, 3, 2, 9, 45, 10)
HOST = 'compute-7'
REGION_RP = '0d4c8a1e-5b2f-4c3d-9e8f-7a6b5c4d3e2f'
PROFILE_JSON = json.dumps([{'resources:FPGA': '1',
                           'trait:CUSTOM_FPGA_INTEL': 'required'}])


def _stamped(**values):
    return dict(values, created_at=CREATED, updated_at=UPDATED)


def first_release_rows():
    """(table name, row) in an order the foreign keys accept."""
    pci = json.dumps({'domain': '0000', 'bus': '5e', 'device': '00',
                      'function': '0'})
    vf = json.dumps({'domain': '0000', 'bus': '5e', 'device': '00',
                     'function': '1'})
    rows = [
        ('devices', _stamped(
            id=1, uuid='6f1e2d3c-4b5a-4697-8877-665544332211', type='FPGA',
            vendor='0x8086', model='PAC Arria 10 GX',
            std_board_info='{"product_id": "0x09c4"}',
            vendor_board_info='{"board": "pac_arria10"}', hostname=HOST,
            status='enabled', status_reason=None)),
        ('deployables', _stamped(
            id=1, uuid='1a2b3c4d-0000-4000-8000-000000000001', parent_id=None,
            root_id=1, name='fpga-0000:5e:00.0', num_accelerators=0,
            device_id=1, driver_name='intel_fpga_driver', rp_uuid=None,
            bitstream_id=None)),
        ('deployables', _stamped(
            id=2, uuid='1a2b3c4d-0000-4000-8000-000000000002', parent_id=1,
            root_id=1, name='fpga-0000:5e:00.0-region0', num_accelerators=2,
            device_id=1, driver_name='intel_fpga_driver', rp_uuid=REGION_RP,
            bitstream_id='9e8d7c6b-5a49-4382-b1a0-f9e8d7c6b5a4')),
        ('attributes', _stamped(
            id=1, uuid='2b3c4d5e-0000-4000-8000-000000000001',
            deployable_id=2, parent_attribute_id=None, key='rc',
            value='FPGA')),
        ('attributes', _stamped(
            id=2, uuid='2b3c4d5e-0000-4000-8000-000000000002',
            deployable_id=2, parent_attribute_id=None, key='board_info',
            value=None)),
        ('attributes', _stamped(
            id=3, uuid='2b3c4d5e-0000-4000-8000-000000000003',
            deployable_id=2, parent_attribute_id=2, key='shell',
            value='d8424dc4a4a3c413f89e433683f9040b')),
        ('controlpath_ids', _stamped(
            id=1, uuid='3c4d5e6f-0000-4000-8000-000000000001', device_id=1,
            cpid_type='PCI', cpid_info=pci)),
        ('attach_handles', _stamped(
            id=1, uuid='4d5e6f70-0000-4000-8000-000000000001',
            deployable_id=2, cpid_id=1, attach_type='PCI', attach_info=vf,
            in_use=True)),
        ('attach_handles', _stamped(
            id=2, uuid='4d5e6f70-0000-4000-8000-000000000002',
            deployable_id=2, cpid_id=1, attach_type='PCI',
            attach_info=vf.replace('"1"', '"2"'), in_use=False)),
        ('device_profiles', _stamped(
            id=1, uuid='5e6f7081-0000-4000-8000-000000000001',
            name='fpga-intel', description='One Intel region',
            profile_json=PROFILE_JSON)),
        ('extended_accelerator_requests', _stamped(
            id=1, uuid='6f708192-0000-4000-8000-000000000001', state='Bound',
            device_profile_id=1, device_profile_group_id=0, hostname=HOST,
            device_rp_uuid=REGION_RP,
            instance_uuid='7081a2b3-0000-4000-8000-000000000001',
            project_id='b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6',
            attach_handle_id=1, deployable_id=2)),
        ('extended_accelerator_requests', _stamped(
            id=2, uuid='6f708192-0000-4000-8000-000000000002',
            state='Initial', device_profile_id=1, device_profile_group_id=0,
            hostname=None, device_rp_uuid=None, instance_uuid=None,
            project_id=None, attach_handle_id=None, deployable_id=None)),
        ('extended_accelerator_requests', _stamped(
            id=3, uuid='6f708192-0000-4000-8000-000000000003',
            state='BindFailed', device_profile_id=1,
            device_profile_group_id=0, hostname=HOST,
            device_rp_uuid=REGION_RP,
            instance_uuid='7081a2b3-0000-4000-8000-000000000003',
            project_id='b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6',
            attach_handle_id=None, deployable_id=2)),
        ('services', _stamped(
            id=1, host=HOST, binary='cyborg-agent', topic='cyborg-agent',
            report_count=42, last_seen_up=UPDATED)),
    ]
    return rows


class _EmptyDatabaseMixin:
    """An empty database of ``backend`` that a test migrates itself."""

    backend = None

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(
            database.Database(self.backend, schema=None))
        self.engine = self.database.engine

    def _tables(self):
        metadata = sa.MetaData()
        metadata.reflect(self.engine)
        return metadata.tables


class MigrationDataTestMixin(_EmptyDatabaseMixin):

    def _fill_first_schema(self):
        migration.upgrade(FIRST, engine=self.engine)
        tables = self._tables()
        rows = first_release_rows()
        with self.engine.begin() as connection:
            for name, row in rows:
                connection.execute(tables[name].insert().values(row))
        return rows

    def _read(self, tables, name, row):
        table = tables[name]
        columns = [table.c[column] for column in row]
        with self.engine.connect() as connection:
            found = connection.execute(
                sa.select(*columns).where(table.c.id == row['id'])).one()
        return dict(found._mapping)

    def test_upgrade_to_head_keeps_every_row_and_value(self):
        rows = self._fill_first_schema()
        counts = {name: sum(1 for table, _ in rows if table == name)
                  for name, _ in rows}

        migration.upgrade('head', engine=self.engine)

        self.assertEqual(migration.head_revision(),
                         migration.current_revision(self.engine))
        tables = self._tables()
        for name, row in rows:
            self.assertEqual(row, self._read(tables, name, row),
                             '%s %s' % (name, row['id']))
        with self.engine.connect() as connection:
            for name, count in counts.items():
                self.assertEqual(count, connection.execute(
                    sa.select(sa.func.count()).select_from(tables[name])
                ).scalar_one(), name)

    def test_head_objects_read_the_first_release_rows(self):
        self._fill_first_schema()
        migration.upgrade('head', engine=self.engine)
        context = cyborg_context.get_admin_context()

        region = objects.Deployable.get_by_uuid(
            context, '1a2b3c4d-0000-4000-8000-000000000002')
        arqs = {arq.uuid: arq for arq in objects.ARQ.list(context)}
        profile = objects.DeviceProfile.get_by_name(context, 'fpga-intel')

        self.assertEqual(('fpga-0000:5e:00.0-region0', REGION_RP,
                          '9e8d7c6b-5a49-4382-b1a0-f9e8d7c6b5a4'),
                         (region.name, region.rp_uuid, region.bitstream_id))
        self.assertEqual(
            ['Bound', 'Initial', 'BindFailed'],
            [arqs['6f708192-0000-4000-8000-00000000000%d' % number].state
             for number in (1, 2, 3)])
        self.assertEqual([{'resources:FPGA': '1',
                           'trait:CUSTOM_FPGA_INTEL': 'required'}],
                         profile.groups)


# Text a JSON encoder must escape, text it need not, a value past the Basic
# Multilingual Plane (as test_rendered_lists), and a control character.
AWKWARD = 'quote " backslash \\ slash / tab \t newline \n é 😀 \x1f'
# Two values whose list is longer than MariaDB's TEXT (64 KiB).
LONG_VALUE = 'v' * 40000


def attributes_list_rows():
    """{deployable id: [(attribute id, parent attribute id, key, value)]}
    of deployables with no, one, several, nested and long attributes
    (attribute ids out of key order: the list is in id order)."""
    return {
        1: [],
        2: [(10, None, 'rc', 'FPGA')],
        3: [(20, None, 'zeta', 'last letter'), (21, None, 'alpha', None),
            (22, None, 'awkward', AWKWARD), (23, None, 'mid', '')],
        4: [(30, None, 'board_info', None),
            (31, 30, 'shell', 'd8424dc4a4a3c413f89e433683f9040b'),
            (32, None, 'rc', 'FPGA')],
        5: [(40, None, 'long1', LONG_VALUE), (41, None, 'long2', LONG_VALUE)],
    }


class AttributesListMigrationTestMixin(_EmptyDatabaseMixin):
    """Revision 2efde3974ce5 fills deployables.attributes_list and
    has_nested_attributes with what the lists aggregated before."""

    def _fill(self):
        migration.upgrade(BEFORE_ATTRIBUTES_LIST, engine=self.engine)
        tables = self._tables()
        deployables = attributes_list_rows()
        with self.engine.begin() as connection:
            connection.execute(tables['devices'].insert().values(_stamped(
                id=1, uuid='6f1e2d3c-4b5a-4697-8877-665544332211',
                type='FPGA', vendor='0x8086', model='PAC', hostname=HOST,
                status='enabled')))
            for deployable_id in deployables:
                connection.execute(tables['deployables'].insert().values(
                    _stamped(id=deployable_id,
                             uuid='1a2b3c4d-0000-4000-8000-%012d'
                             % deployable_id,
                             name='fpga-%d' % deployable_id,
                             num_accelerators=1, device_id=1)))
            for deployable_id, attributes in deployables.items():
                for attribute_id, parent_id, key, value in attributes:
                    connection.execute(tables['attributes'].insert().values(
                        _stamped(id=attribute_id,
                                 uuid='2b3c4d5e-0000-4000-8000-%012d'
                                 % attribute_id,
                                 deployable_id=deployable_id,
                                 parent_attribute_id=parent_id, key=key,
                                 value=value)))
        return deployables

    def _stored(self):
        """{id: (attributes_list, has_nested_attributes, aggregate now,
        updated_at)} of every deployable."""
        table = self._tables()['deployables']
        query = sa.select(
            table.c.id, table.c.attributes_list,
            table.c.has_nested_attributes,
            deployable_filters._attributes_text(table.c.id),
            table.c.updated_at)
        with self.engine.connect() as connection:
            return {row[0]: tuple(row[1:]) for row in connection.execute(
                query)}

    def test_upgrade_stores_the_aggregate_of_each_deployable(self):
        deployables = self._fill()

        migration.upgrade('head', engine=self.engine)

        stored = self._stored()
        self.assertEqual(set(deployables), set(stored))
        for deployable_id, attributes in deployables.items():
            text, has_nested, aggregate, updated_at = stored[deployable_id]
            # Byte for byte what the lists aggregated before.
            self.assertEqual(aggregate, text, deployable_id)
            self.assertEqual(UPDATED, updated_at, deployable_id)
            self.assertEqual(
                any(parent is not None for _, parent, _, _ in attributes),
                bool(has_nested), deployable_id)
            if not attributes:
                self.assertIsNone(text)
                continue
            expected = [{key: value} for _, _, key, value in attributes]
            self.assertEqual(expected, json.loads(text), deployable_id)
            if deployable_id != 3:
                # json.dumps's text, where no control character is escaped
                # (MariaDB writes a \u escape's hex digits upper case).
                self.assertEqual(json.dumps(expected, ensure_ascii=False),
                                 text, deployable_id)
        self.assertGreater(len(stored[5][0].encode()), 65535)

    def test_downgrade_drops_the_columns_and_upgrade_fills_them_again(self):
        self._fill()
        migration.upgrade('head', engine=self.engine)
        filled = self._stored()

        with self.engine.connect() as connection:
            command.downgrade(migration._config(connection),
                              BEFORE_ATTRIBUTES_LIST)
        columns = {column['name'] for column in
                   sa.inspect(self.engine).get_columns('deployables')}
        self.assertEqual(BEFORE_ATTRIBUTES_LIST,
                         migration.current_revision(self.engine))
        self.assertFalse({'attributes_list', 'has_nested_attributes'}
                         & columns)

        migration.upgrade('head', engine=self.engine)
        self.assertEqual(filled, self._stored())


class SQLiteAttributesListMigrationTest(AttributesListMigrationTestMixin,
                                        base.TestCase):
    backend = 'sqlite'


class MySQLAttributesListMigrationTest(AttributesListMigrationTestMixin,
                                       base.TestCase):
    backend = 'mysql'


class PostgreSQLAttributesListMigrationTest(AttributesListMigrationTestMixin,
                                            base.TestCase):
    backend = 'postgresql'


class SQLiteMigrationDataTest(MigrationDataTestMixin, base.TestCase):
    backend = 'sqlite'


class MySQLMigrationDataTest(MigrationDataTestMixin, base.TestCase):
    backend = 'mysql'


class PostgreSQLMigrationDataTest(MigrationDataTestMixin, base.TestCase):
    backend = 'postgresql'
