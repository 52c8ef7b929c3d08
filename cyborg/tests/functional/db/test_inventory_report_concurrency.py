"""Overlapping inventory reports on SQLite, MariaDB and PostgreSQL.

Two reports of one host that overlap must leave one row per device,
deployable and attach handle: the second waits for the first's lock on the
host, then reads what the first wrote. A report of another host must not
wait for it. The overlap is made certain by holding a report's transaction
open right after its read of the host's devices (an engine event in that
report's thread), and likely by many threads sending the same new
inventory at once.
"""

import datetime
import threading

import sqlalchemy as sa

from cyborg import context as cyborg_context
from cyborg.conductor import attributes as conductor_attributes
from cyborg.conductor import inventory_report
from cyborg.db import models
from cyborg.db.queries import host_locks
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.conductor import reports
from cyborg.tests.unit.conductor import test_inventory_report as cases

fpga = reports.fpga
# Long enough for a report that is not held back to end many times over.
PATIENCE = 3
# Bounds every wait, so that a broken test fails instead of hanging.
TIMEOUT = 120


def is_read_of_devices(statement):
    """Whether ``statement`` is a report's read of the host's devices."""
    words = statement.split()
    return (words[0].upper() == 'SELECT'
            and 'devices' in (word.strip('`"') for word in words))


class ReportInThread:
    """One report of ``host`` in its own thread, with its own context.

    With a ``start`` barrier, the thread waits on it before reporting.
    """

    def __init__(self, host, devices, start=None):
        self.host = host
        self.devices = devices
        self.start_barrier = start
        self.error = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run)

    def _run(self):
        try:
            if self.start_barrier is not None:
                self.start_barrier.wait(TIMEOUT)
            inventory_report.apply(cyborg_context.get_admin_context(),
                                   self.host, reports.report(*self.devices))
        except Exception as error:  # re-raised in join, in the test's thread
            self.error = error
        finally:
            self.done.set()

    def start(self):
        self.thread.start()
        return self

    def join(self):
        self.thread.join(TIMEOUT)
        if self.thread.is_alive():
            raise AssertionError('the report of %s did not end' % self.host)
        if self.error is not None:
            raise self.error


def expected_counts(cards, vfs):
    """The rows of a host reporting ``cards`` times ``fpga(bus, vfs)``."""
    # Per card: the root, its region and a VF deployable with one handle
    # and a 'function' attribute per VF; rc and shell (name, version) on
    # the root, rc and trait0 on the region.
    return {'devices': cards, 'controlpath_ids': cards,
            'deployables': cards * (2 + vfs),
            'attach_handles': cards * vfs,
            'attributes': cards * (6 + vfs)}


class ConcurrencyTests:
    """The cases, for a test case that sets ``backend``."""

    backend = None

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(self.backend))

    def counts(self, host):
        """How many rows ``host`` has in each table."""
        return {table: len(cases.rows_of(self.database, table, host))
                for table in ('devices', 'controlpath_ids', 'deployables',
                              'attach_handles', 'attributes')}

    def hold_after_read_of_devices(self, held):
        """Stop the report ``held`` right after it reads the host's devices.

        Returns two events: one set once it has stopped there, its
        transaction open, and one that lets it go on.
        """
        stopped = threading.Event()
        go_on = threading.Event()

        def after_execute(connection, cursor, statement, *args):
            if (threading.current_thread() is held.thread
                    and not stopped.is_set()
                    and is_read_of_devices(statement)):
                stopped.set()
                go_on.wait(TIMEOUT)

        engine = self.database.engine
        sa.event.listen(engine, 'after_cursor_execute', after_execute)
        self.addCleanup(sa.event.remove, engine, 'after_cursor_execute',
                        after_execute)
        self.addCleanup(go_on.set)
        return stopped, go_on

    def test_overlapping_reports_of_a_host_write_each_device_once(self):
        inventory = [fpga(0x5e, vfs=2), fpga(0x60, vfs=2)]
        first = ReportInThread('compute-1', inventory)
        stopped, go_on = self.hold_after_read_of_devices(first)
        first.start()
        self.assertTrue(stopped.wait(TIMEOUT))

        # The first report has read "no such device" and keeps its
        # transaction open while the second one starts.
        second = ReportInThread('compute-1', inventory).start()
        second_waited = not second.done.wait(PATIENCE)
        go_on.set()
        first.join()
        second.join()

        self.assertEqual(expected_counts(2, vfs=2), self.counts('compute-1'))
        self.assertTrue(second_waited,
                        'the second report did not wait for the first')

    def test_many_reports_of_a_new_host_at_once(self):
        inventory = [fpga(bus, vfs=2) for bus in range(3)]
        for host in ('compute-1', 'compute-2', 'compute-3'):
            start = threading.Barrier(4)
            reports = [ReportInThread(host, inventory, start).start()
                       for _ in range(4)]
            for one in reports:
                one.join()

            self.assertEqual(expected_counts(3, vfs=2), self.counts(host),
                             host)

    def test_the_host_lock_is_only_taken_in_a_callers_transaction(self):
        # Alone, it would commit at once: a lock that holds nothing.
        self.assertRaises(RuntimeError, host_locks.lock_host,
                          cyborg_context.get_admin_context(), 'compute-1',
                          datetime.datetime(2026, 11, 24))


class OtherHostTests:
    """A report of one host does not wait for another host's (not SQLite)."""

    def test_a_report_of_another_host_does_not_wait(self):
        # The other host is new, then changed, then new again and between
        # the held one and the first in key order (where a gap lock would
        # be).
        for vfs, other_host in ((2, 'compute-1'), (1, 'compute-1'),
                                (1, 'compute-15')):
            held = ReportInThread('compute-2', [fpga(0x5e, vfs=vfs)])
            stopped, go_on = self.hold_after_read_of_devices(held)
            held.start()
            self.assertTrue(stopped.wait(TIMEOUT))

            other = ReportInThread(other_host, [fpga(0x5e, vfs=vfs)]).start()
            other_ended = other.done.wait(10 * PATIENCE)
            held_meanwhile = not held.done.is_set()
            go_on.set()
            held.join()
            other.join()

            self.assertTrue(other_ended,
                            '%s waited for compute-2' % other_host)
            self.assertTrue(held_meanwhile)
            self.assertEqual(expected_counts(1, vfs), self.counts('compute-2'))
            self.assertEqual(expected_counts(1, vfs), self.counts(other_host))


    def test_an_api_attribute_write_waits_for_a_report_of_its_host(self):
        ReportInThread('compute-1', [fpga(0x5e, vfs=1)]).start().join()
        root = [row for row in cases.rows_of(self.database, 'deployables',
                                             'compute-1')
                if row['parent_id'] is None][0]
        # The next report changes the root's attributes, and is held with
        # the host's lock.
        held = ReportInThread('compute-1',
                              [fpga(0x5e, vfs=1, shell_version='2.0')])
        stopped, go_on = self.hold_after_read_of_devices(held)
        held.start()
        self.assertTrue(stopped.wait(TIMEOUT))
        write_began = models.utcnow()
        written = threading.Event()
        errors = []

        def write():
            try:
                conductor_attributes._create_row(
                    cyborg_context.get_admin_context(),
                    {'deployable_id': root['id'], 'key': 'api_key',
                     'value': 'api value'})
            except Exception as error:  # asserted in the test's thread
                errors.append(error)
            finally:
                written.set()
        writer = threading.Thread(target=write)
        writer.start()
        waited = not written.wait(PATIENCE)
        go_on.set()
        held.join()
        writer.join(TIMEOUT)

        self.assertEqual([], errors)
        self.assertTrue(waited, 'the API write did not wait for the report')
        # The row's stored list has the report's change and the API's
        # attribute: neither write missed the other's.
        stored = [row for row in cases.rows_of(self.database, 'deployables',
                                               'compute-1')
                  if row['id'] == root['id']][0]['attributes_list']
        self.assertIn('"api_key": "api value"', stored)
        self.assertIn('"2.0"', stored)
        # The API write locked the host's row, made none of its own, and
        # wrote the row it locked (a lock another Galera node sees): its
        # time, after the report's, and the digest cleared.
        with self.database.engine.connect() as connection:
            lock_rows = connection.execute(
                sa.select(host_locks.HostLock)).all()
        self.assertEqual(1, len(lock_rows))
        self.assertGreaterEqual(lock_rows[0].updated_at, write_began)
        self.assertIsNone(lock_rows[0].report_digest)


class SQLiteConcurrencyTests(ConcurrencyTests, base.TestCase):
    backend = 'sqlite'


class MariaDBConcurrencyTests(ConcurrencyTests, OtherHostTests,
                              base.TestCase):
    backend = 'mysql'


class PostgreSQLConcurrencyTests(ConcurrencyTests, OtherHostTests,
                                 base.TestCase):
    backend = 'postgresql'
