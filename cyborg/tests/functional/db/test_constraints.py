"""Constraints and cascades the data model promises, on SQLite, MariaDB and PostgreSQL.

The database itself refuses a double allocation of an attach handle and
removes a device's dependent rows; these tests prove it on each backend.
"""

import sqlalchemy as sa
from oslo_db import exception as db_exception

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import objects
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.db import records


class ConstraintsTestMixin:

    backend = None

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(self.backend))
        self.context = cyborg_context.get_admin_context()
        self.tree = records.DeviceTree(self.context, handles=2)
        self.profile = records.make_device_profile(self.context)

    def _count(self, model):
        with self.database.engine.connect() as connection:
            return connection.execute(
                sa.select(sa.func.count()).select_from(model)).scalar()

    def test_second_arq_on_the_same_attach_handle_is_refused(self):
        handle = self.tree.attach_handles[0]
        records.make_arq(self.context, self.profile, state='Bound',
                         attach_handle_id=handle.id)

        self.assertRaises(db_exception.DBDuplicateEntry, records.make_arq,
                          self.context, self.profile, state='Bound',
                          attach_handle_id=handle.id)
        self.assertEqual(1, self._count(models.ARQ))

    def test_unknown_arq_state_is_refused_by_the_database(self):
        arq = records.make_arq(self.context, self.profile)

        with self.database.engine.begin() as connection:
            statement = sa.update(models.ARQ).values(
                state='Exploded')
            # oslo.db maps no CHECK violation; MariaDB reports it as error 4025.
            self.assertRaises((db_exception.DBError, sa.exc.DBAPIError),
                              connection.execute, statement)
        self.assertEqual('Initial', objects.ARQ.get_by_uuid(
            self.context, arq.uuid).state)

    def test_deleting_a_device_removes_its_dependent_rows(self):
        child = records.make_deployable(self.context, self.tree.device,
                                        parent_id=self.tree.deployable.id,
                                        root_id=self.tree.deployable.id)
        records.make_attribute(self.context, child)
        arq = records.make_arq(self.context, self.profile, state='Bound',
                               attach_handle_id=self.tree.attach_handles[0].id,
                               deployable_id=self.tree.deployable.id)
        survivor = records.DeviceTree(self.context, handles=1)

        self.tree.device.destroy(self.context)

        self.assertEqual(1, self._count(models.Device))
        self.assertEqual([survivor.deployable.uuid],
                         [item.uuid for item in objects.Deployable.list(self.context)])
        self.assertEqual([survivor.attribute.uuid],
                         [item.uuid for item in objects.Attribute.list(self.context)])
        self.assertEqual([survivor.controlpath_id.uuid],
                         [item.uuid for item in objects.ControlpathID.list(self.context)])
        self.assertEqual([survivor.attach_handles[0].uuid],
                         [item.uuid for item in objects.AttachHandle.list(self.context)])
        # The ARQ stays (Nova owns it) but lets go of the vanished handle.
        loaded = objects.ARQ.get_by_uuid(self.context, arq.uuid)
        self.assertIsNone(loaded.attach_handle_id)
        self.assertIsNone(loaded.deployable_id)

    def test_a_profile_in_use_cannot_be_deleted(self):
        records.make_arq(self.context, self.profile)

        self.assertRaises(db_exception.DBReferenceError, self.profile.destroy,
                          self.context)
        self.assertEqual(self.profile.uuid, objects.DeviceProfile.get_by_uuid(
            self.context, self.profile.uuid).uuid)

    def test_duplicate_profile_name_or_uuid_is_refused(self):
        self.assertRaises(exception.DuplicateName, records.make_device_profile,
                          self.context, name=self.profile.name)
        error = self.assertRaises(exception.Conflict,
                                  records.make_device_profile, self.context,
                                  uuid=self.profile.uuid)
        self.assertNotIsInstance(error, exception.DuplicateName)

    def test_paging_with_nulls_is_the_same_on_every_backend(self):
        reasons = [None, 'b', None, 'a', 'b']
        for reason in reasons:
            records.make_device(self.context, status_reason=reason)
        for sort_dir in ('asc', 'desc'):
            everything = objects.Device.list(
                self.context, sort_key='status_reason', sort_dir=sort_dir)
            pages, marker = [], None
            while True:
                page = objects.Device.list(
                    self.context, sort_key='status_reason', sort_dir=sort_dir,
                    limit=2, marker=marker)
                if not page:
                    break
                pages.extend(page)
                marker = page[-1].uuid
            values = [item.status_reason for item in everything]
            expected = [None, None, None, 'a', 'b', 'b']
            self.assertEqual(expected if sort_dir == 'asc' else expected[::-1],
                             values)
            self.assertEqual([item.uuid for item in everything],
                             [item.uuid for item in pages])


class SQLiteConstraintsTest(ConstraintsTestMixin, base.TestCase):
    backend = 'sqlite'


class MySQLConstraintsTest(ConstraintsTestMixin, base.TestCase):
    backend = 'mysql'


class PostgreSQLConstraintsTest(ConstraintsTestMixin, base.TestCase):
    backend = 'postgresql'
