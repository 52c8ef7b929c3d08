"""Every object list costs the same number of SQL statements for 1 row or 50."""

import contextlib

import sqlalchemy as sa

from cyborg import context as cyborg_context
from cyborg import objects
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.db import records

TRANSACTION_CONTROL = {'BEGIN', 'COMMIT', 'ROLLBACK', 'SAVEPOINT', 'RELEASE'}


@contextlib.contextmanager
def counting_statements(engine):
    """Yield a list that collects the SQL statements ``engine`` runs meanwhile.

    Transaction control (the BEGIN oslo.db issues on SQLite) is left out.
    """
    statements = []

    def record(connection, cursor, statement, parameters, context, many):
        if statement.split(None, 1)[0].upper() not in TRANSACTION_CONTROL:
            statements.append(statement)

    sa.event.listen(engine, 'before_cursor_execute', record)
    try:
        yield statements
    finally:
        sa.event.remove(engine, 'before_cursor_execute', record)


class ListStatementCountTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database())
        self.context = cyborg_context.get_admin_context()
        self.profile = records.make_device_profile(self.context)
        self.tree = records.DeviceTree(self.context, handles=50)
        self.free_handles = list(self.tree.attach_handles)
        records.make_arq(self.context, self.profile)

    def _add_rows(self, count):
        """Add ``count`` rows to every table the objects list."""
        for _ in range(count):
            device = records.make_device(self.context)
            deployable = records.make_deployable(self.context, device)
            records.make_attribute(self.context, deployable, 'rc', 'FPGA')
            records.make_attribute(self.context, deployable, 'trait0',
                                   'CUSTOM_FAKE_DEVICE')
            records.make_controlpath_id(self.context, device)
            records.make_device_profile(self.context)
        for _ in range(count):
            handle = self.free_handles.pop()
            arq = records.make_arq(self.context, self.profile)
            arq.attach_handle_id = handle.id
            arq.state = 'Bound'
            arq.save(self.context)

    def _statements_per_list(self):
        counts = {}
        for cls in (objects.Device, objects.Deployable, objects.Attribute,
                    objects.ControlpathID, objects.AttachHandle,
                    objects.DeviceProfile, objects.ARQ):
            # Page after the first row, so every page holds rows.
            first = cls.list(self.context, limit=1, sort_key='created_at')[0]
            with counting_statements(self.database.engine) as plain:
                listed = cls.list(self.context)
            with counting_statements(self.database.engine) as paged:
                cls.list(self.context, marker=first.uuid,
                         sort_key='created_at', limit=100)
            counts[cls.obj_name()] = (len(listed), len(plain), len(paged))
        return counts

    def test_fifty_rows_cost_the_statements_of_one(self):
        self._add_rows(1)
        with_one = self._statements_per_list()
        self._add_rows(49)
        with_fifty = self._statements_per_list()

        for name, (rows, plain, paged) in with_fifty.items():
            self.assertGreaterEqual(rows, 50, name)
            self.assertEqual(with_one[name][1:], (plain, paged), name)
            # One query, one more for deployables' attributes and the marker.
            self.assertLessEqual(plain, 2, name)
