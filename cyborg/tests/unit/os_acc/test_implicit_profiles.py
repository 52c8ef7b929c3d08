"""The device profiles plug makes for flavors that name none.

The name is a digest of the groups, so one flavor's request always finds
the same profile; plugs making it at the same time end with one profile.
"""

from concurrent import futures
import re
import threading

import sqlalchemy as sa

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg.conductor import os_acc_calls
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.db import records

GROUPS = [{'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}]
# What the device profiles API accepts as a name.
NAME = re.compile(r'[a-zA-Z0-9_-]{1,255}')


class ImplicitProfileNameTests(base.TestCase):

    def test_the_same_groups_give_the_same_valid_name(self):
        name = os_acc_calls.implicit_profile_name(GROUPS)
        self.assertEqual(name, os_acc_calls.implicit_profile_name(
            [dict(reversed(list(GROUPS[0].items())))]))
        self.assertTrue(name.startswith('os-acc-'))
        self.assertTrue(NAME.fullmatch(name), name)

    def test_other_groups_give_another_name(self):
        names = {os_acc_calls.implicit_profile_name(groups) for groups in (
            GROUPS, [{'resources:FPGA': '2'}], [{'resources:FPGA': '1'}],
            [{'resources:FPGA': '1'}, {'resources:FPGA': '1'}])}
        self.assertEqual(4, len(names))


class ImplicitProfileTests(base.TestCase):

    backend = 'sqlite'

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(self.backend))
        self.context = cyborg_context.get_admin_context()

    def profiles(self):
        with self.database.engine.connect() as connection:
            return connection.execute(sa.select(
                models.DeviceProfile.name,
                models.DeviceProfile.profile_json)).all()

    def test_made_once_and_found_afterwards(self):
        first = os_acc_calls.ensure_implicit_profile(self.context, GROUPS)
        second = os_acc_calls.ensure_implicit_profile(self.context, GROUPS)

        self.assertEqual(first, second)
        self.assertEqual([first], [row.name for row in self.profiles()])

    def test_concurrent_plugs_make_one_profile(self):
        barrier = threading.Barrier(10)

        def ensure():
            barrier.wait(10)
            return os_acc_calls.ensure_implicit_profile(
                cyborg_context.get_admin_context(), GROUPS)

        with futures.ThreadPoolExecutor(max_workers=10) as executor:
            names = list(executor.map(lambda _: ensure(), range(10)))

        self.assertEqual({os_acc_calls.implicit_profile_name(GROUPS)},
                         set(names))
        self.assertEqual(1, len(self.profiles()))

    def test_a_profile_of_that_name_with_other_groups_is_a_conflict(self):
        name = os_acc_calls.implicit_profile_name(GROUPS)
        records.make_device_profile(self.context, name=name,
                                    groups=[{'resources:FPGA': '2'}])

        error = self.assertRaises(exception.Conflict,
                                  os_acc_calls.ensure_implicit_profile,
                                  self.context, GROUPS)
        self.assertIn(name, str(error))

    def test_malformed_groups_are_refused(self):
        for groups in ([], [{}], [{'resources:FPGA': 1}], {'a': 'b'}):
            self.assertRaises(exception.Invalid,
                              os_acc_calls.ensure_implicit_profile,
                              self.context, groups)
        self.assertEqual([], self.profiles())


class MariaDBImplicitProfileTests(ImplicitProfileTests):
    backend = 'mysql'


class PostgreSQLImplicitProfileTests(ImplicitProfileTests):
    backend = 'postgresql'
