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

from cyborg import context as cyborg_context
from cyborg import objects
from cyborg.db import migration
from cyborg.tests import base
from cyborg.tests.fixtures import database

FIRST = 'c1f7a5e3b2d0'
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


class MigrationDataTestMixin:

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


class SQLiteMigrationDataTest(MigrationDataTestMixin, base.TestCase):
    backend = 'sqlite'


class MySQLMigrationDataTest(MigrationDataTestMixin, base.TestCase):
    backend = 'mysql'


class PostgreSQLMigrationDataTest(MigrationDataTestMixin, base.TestCase):
    backend = 'postgresql'
