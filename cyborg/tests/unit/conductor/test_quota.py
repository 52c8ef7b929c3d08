"""Quotas with local limits: ARQ and device profile creates, usage counting.

The limits come from ``[quota] driver = local`` (``quota.LocalEnforcer``,
the same look-ups as oslo.limit's Enforcer); Keystone's own registered and
project limits are in ``cyborg.tests.functional.api.test_quotas_keystone``
and races on the database servers in
``cyborg.tests.functional.db.test_quota_concurrency``.
"""

import os
import tempfile

import sqlalchemy as sa

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import objects
from cyborg.conductor import arqs
from cyborg.conductor import device_profiles
from cyborg.conductor import quota
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.api.real_app import TRANSACTION_CONTROL
from cyborg.tests.unit.conductor import projects
from cyborg.tests.unit.db import records

PROJECT = projects.PROJECT
OTHER_PROJECT = projects.OTHER_PROJECT


def local_quotas(**limits):
    """Quotas of ``[quota] driver = local`` with these limits."""
    limits = {name.replace('class_', 'class:'): value
              for name, value in limits.items()}
    return quota.Quotas(lambda: quota.LocalEnforcer(limits))


class TestCounting(base.TestCase):

    def test_resource_classes_of_a_group(self):
        self.assertEqual(
            {'FPGA': 2, 'CUSTOM_QAT': 1},
            quota.resource_classes({'resources:FPGA': '2',
                                    'resources:CUSTOM_QAT': ' 1',
                                    'trait:CUSTOM_X': 'required'}))
        self.assertRaises(exception.Invalid, quota.resource_classes,
                          {'resources:FPGA': 'two'})

    def test_arqs_of_a_group_hold_its_classes_in_name_order(self):
        group = {'resources:PGPU': '1', 'resources:FPGA': '2'}
        self.assertEqual({'class:FPGA': 2, 'class:PGPU': 1},
                         quota.arq_classes(group, 3))
        self.assertEqual({'class:FPGA': 4, 'class:PGPU': 2},
                         quota.arq_classes(group, 6))
        # A set that is not whole fills FPGA first.
        self.assertEqual({'class:FPGA': 2}, quota.arq_classes(group, 2))
        self.assertEqual({'class:FPGA': 3, 'class:PGPU': 1},
                         quota.arq_classes(group, 4))
        self.assertEqual({}, quota.arq_classes({'trait:X': 'required'}, 1))

    def test_only_limited_resources_are_checked(self):
        self.assertEqual(
            {'class:FPGA': 2},
            quota.limited({'class:FPGA': 3, 'class:PGPU': -1},
                          {'class:FPGA': 2, 'class:PGPU': 1,
                           'class:VGPU': 4, 'device_profiles': 0}))

    def test_the_error_names_the_limit(self):
        error = self.assertRaises(
            exception.QuotaExceeded, quota.enforce,
            {'class:FPGA': 8, 'class:PGPU': 1},
            {'class:FPGA': 2, 'class:PGPU': 1}, {'class:FPGA': 7})
        self.assertEqual(403, error.code)
        self.assertEqual('Quota exceeded for class:FPGA: requested 2, used 7, '
                         'limit 8', error.message)

    def test_every_resource_over_its_limit_is_named(self):
        error = self.assertRaises(
            exception.QuotaExceeded, quota.enforce,
            {'class:FPGA': 1, 'class:PGPU': 0},
            {'class:PGPU': 1, 'class:FPGA': 2}, {})
        self.assertEqual('Quota exceeded for class:FPGA: requested 2, used 0, '
                         'limit 1; class:PGPU: requested 1, used 0, limit 0',
                         error.message)

    def test_up_to_the_limit_passes(self):
        quota.enforce({'class:FPGA': 8}, {'class:FPGA': 1}, {'class:FPGA': 7})
        quota.enforce({'class:FPGA': -1}, {'class:FPGA': 100}, {})
        quota.enforce({}, {'class:FPGA': 100}, {})


class TestConfiguration(base.TestCase):

    def _config_file(self, text):
        with tempfile.NamedTemporaryFile('w', suffix='.conf',
                                         delete=False) as config_file:
            config_file.write(text)
        self.addCleanup(os.unlink, config_file.name)
        conf.CONF(['--config-file', config_file.name], project='cyborg',
                  default_config_files=[])

    def test_off_by_default(self):
        quotas = quota.Quotas.from_conf(conf.CONF)
        self.assertFalse(quotas.enabled)
        self.assertEqual({}, quotas.limits_for(PROJECT))

    def test_local_limits_from_a_config_file(self):
        self._config_file('[quota]\ndriver = local\n'
                          'local_limits = class:FPGA=2,device_profiles=10\n')
        quotas = quota.Quotas.from_conf(conf.CONF)
        self.assertTrue(quotas.enabled)
        self.assertEqual({'class:FPGA': 2, 'device_profiles': 10},
                         quotas.limits_for(PROJECT))
        self.assertEqual({'class:FPGA': 2, 'device_profiles': 10},
                         quotas.limits_for(None))

    def test_local_enforcer_answers_as_oslo_limit_does(self):
        enforcer = quota.LocalEnforcer({'class:FPGA': 2})
        self.assertEqual([('class:FPGA', 2), ('class:PGPU', 0)],
                         enforcer.get_registered_limits(['class:FPGA',
                                                         'class:PGPU']))
        self.assertEqual([('class:FPGA', 2)],
                         enforcer.get_project_limits(PROJECT, ['class:FPGA']))
        self.assertEqual([], enforcer.get_project_limits(PROJECT, None))

    def test_a_limit_that_is_not_an_integer_is_refused(self):
        self._config_file('[quota]\ndriver = local\n'
                          'local_limits = class:FPGA=two\n')
        self.assertRaises(ValueError, quota.Quotas.from_conf, conf.CONF)

    def test_unreadable_limits_are_503(self):
        def broken():
            raise ValueError("Can't find endpoint for 1234")

        error = self.assertRaises(exception.QuotaLimitsUnavailable,
                                  quota.Quotas(broken).limits_for, PROJECT)
        self.assertEqual(503, error.code)
        self.assertIn("Can't find endpoint for 1234", error.message)


class TestARQQuotas(projects.ProjectsTestCase):

    def setUp(self):
        super().setUp()
        self.fpga = records.make_device_profile(
            self.admin, name='fpga', groups=[{'resources:FPGA': '1'}])
        self.two_fpgas = records.make_device_profile(
            self.admin, name='two-fpgas', groups=[{'resources:FPGA': '2'}])
        self.mixed = records.make_device_profile(
            self.admin, name='mixed',
            groups=[{'resources:FPGA': '1'}, {'resources:PGPU': '2'}])
        self.quotas = local_quotas(class_FPGA=3, class_PGPU=2)

    def _arqs(self, context):
        return [arq for arq in objects.ARQ.list(self.admin)
                if arq.project_id == context.project_id]

    def test_creates_up_to_the_limit_then_403(self):
        arqs.create(self.member, 'two-fpgas', quotas=self.quotas)
        arqs.create(self.member, 'fpga', quotas=self.quotas)

        error = self.assertRaises(exception.QuotaExceeded, arqs.create,
                                  self.member, 'fpga', quotas=self.quotas)
        self.assertEqual(403, error.code)
        self.assertEqual('Quota exceeded for class:FPGA: requested 1, used 3, '
                         'limit 3', error.message)
        self.assertEqual(3, len(self._arqs(self.member)))

    def test_a_request_past_the_limit_creates_nothing(self):
        arqs.create(self.member, 'two-fpgas', quotas=self.quotas)

        error = self.assertRaises(exception.QuotaExceeded, arqs.create,
                                  self.member, 'two-fpgas',
                                  quotas=self.quotas)
        self.assertIn('requested 2, used 2, limit 3', error.message)
        self.assertEqual(2, len(self._arqs(self.member)))

    def test_each_project_has_its_own_usage(self):
        arqs.create(self.member, 'two-fpgas', quotas=self.quotas)
        arqs.create(self.member, 'fpga', quotas=self.quotas)

        arqs.create(self.other, 'two-fpgas', quotas=self.quotas)
        self.assertEqual(2, len(self._arqs(self.other)))

    def test_each_class_has_its_own_limit(self):
        arqs.create(self.member, 'mixed', quotas=self.quotas)
        error = self.assertRaises(exception.QuotaExceeded, arqs.create,
                                  self.member, 'mixed', quotas=self.quotas)
        self.assertEqual('Quota exceeded for class:PGPU: requested 2, used 2, '
                         'limit 2', error.message)
        # Only the FPGA group: one more FPGA is within its limit.
        created = arqs.create(self.member, 'mixed', 0, quotas=self.quotas)
        self.assertEqual([0], [arq.device_profile_group_id for arq in created])

    def test_a_class_without_a_limit_is_not_limited(self):
        records.make_device_profile(self.admin, name='vgpus',
                                    groups=[{'resources:VGPU': '20'}])
        created = arqs.create(self.member, 'vgpus', quotas=self.quotas)
        self.assertEqual(20, len(created))

    def test_deleting_arqs_gives_their_accelerators_back(self):
        created = arqs.create(self.member, 'two-fpgas', quotas=self.quotas)
        arqs.create(self.member, 'fpga', quotas=self.quotas)
        arqs.delete(self.member, [created[0].uuid])

        arqs.create(self.member, 'fpga', quotas=self.quotas)
        self.assertEqual(3, len(self._arqs(self.member)))

    def test_bound_arqs_count_as_they_did_when_created(self):
        # Usage is every ARQ that exists, whatever its state.
        created = arqs.create(self.member, 'two-fpgas', quotas=self.quotas)
        table = models.ARQ.__table__
        with self.database.engine.begin() as connection:
            for state, arq in zip(('BindStarted', 'Bound'), created, strict=True):
                connection.execute(sa.update(table).where(
                    table.c.uuid == arq.uuid).values(state=state))
        self.assertEqual({'class:FPGA': 2},
                         quota.arq_usage(self.admin, PROJECT))
        self.assertRaises(exception.QuotaExceeded, arqs.create, self.member,
                          'two-fpgas', quotas=self.quotas)

    def test_no_quotas_no_check(self):
        for _ in range(3):
            arqs.create(self.member, 'two-fpgas')
        arqs.create(self.member, 'two-fpgas', quotas=local_quotas())
        self.assertEqual(8, len(self._arqs(self.member)))

    def test_recheck_deletes_what_a_concurrent_create_pushed_over(self):
        limits = {'class:FPGA': 3}
        created, deltas = arqs._create_rows(self.member, 'two-fpgas', None,
                                            limits)
        self.assertEqual({'class:FPGA': 2}, deltas)
        # Another request's ARQ, committed meanwhile.
        records.make_arq(self.admin, self.two_fpgas, project_id=PROJECT)
        records.make_arq(self.admin, self.two_fpgas, project_id=PROJECT)

        error = self.assertRaises(exception.QuotaExceeded,
                                  arqs._recheck_quota, self.member, created,
                                  limits, deltas)
        self.assertEqual('Quota exceeded for class:FPGA: requested 2, used 2, '
                         'limit 3', error.message)
        remaining = {arq.uuid for arq in self._arqs(self.member)}
        self.assertEqual(2, len(remaining))
        self.assertFalse(remaining & {arq.uuid for arq in created})

    def test_usage_is_one_query_whatever_the_rows(self):
        statements = []

        def count(connection, cursor, statement, *args):
            if statement.split(None, 1)[0].upper() not in TRANSACTION_CONTROL:
                statements.append(statement)

        for index in range(20):
            profile = records.make_device_profile(
                self.admin, groups=[{'resources:FPGA': '1'},
                                    {'resources:PGPU': '1'}])
            records.make_arq(self.admin, profile, project_id=PROJECT,
                             device_profile_group_id=index % 2)
        records.make_arq(self.admin, self.fpga, project_id=OTHER_PROJECT)
        sa.event.listen(self.database.engine, 'before_cursor_execute', count)
        try:
            usage = quota.arq_usage(self.admin, PROJECT)
            profiles = quota.device_profile_usage(self.admin)
        finally:
            sa.event.remove(self.database.engine, 'before_cursor_execute',
                            count)
        self.assertEqual({'class:FPGA': 10, 'class:PGPU': 10}, usage)
        self.assertEqual({'device_profiles': 23}, profiles)
        self.assertEqual(2, len(statements))

    def test_create_with_a_limit_costs_two_statements_more(self):
        statements = []

        def count(connection, cursor, statement, *args):
            if statement.split(None, 1)[0].upper() not in TRANSACTION_CONTROL:
                statements.append(statement)

        large = records.make_device_profile(
            self.admin, groups=[{'resources:FPGA': '30'},
                                {'resources:PGPU': '20'}])
        unlimited = local_quotas(class_FPGA=1000, class_PGPU=1000)
        sa.event.listen(self.database.engine, 'before_cursor_execute', count)
        try:
            arqs.create(self.member, large.name)
            without = len(statements)
            statements.clear()
            arqs.create(self.member, large.name, quotas=unlimited)
            with_one_page = len(statements)
            statements.clear()
            arqs.create(self.member, 'fpga', quotas=unlimited)
            small = len(statements)
        finally:
            sa.event.remove(self.database.engine, 'before_cursor_execute',
                            count)
        self.assertEqual(without + 2, with_one_page)
        self.assertEqual(with_one_page, small)


class TestARQQuotasMySQL(TestARQQuotas):
    backend = 'mysql'


class TestARQQuotasPostgreSQL(TestARQQuotas):
    backend = 'postgresql'


class TestDeviceProfileQuotas(base.TestCase):

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(
            backend='sqlite', schema='migrations'))
        self.context = cyborg_context.get_admin_context()
        self.quotas = local_quotas(device_profiles=3)

    def _create(self, *names):
        return device_profiles.create(
            self.context, [{'name': name, 'groups': [{'resources:FPGA': '1'}]}
                           for name in names], quotas=self.quotas)

    def test_creates_up_to_the_limit_then_403(self):
        self._create('one', 'two')
        self._create('three')

        error = self.assertRaises(exception.QuotaExceeded, self._create,
                                  'four')
        self.assertEqual(403, error.code)
        self.assertEqual('Quota exceeded for device_profiles: requested 1, '
                         'used 3, limit 3', error.message)
        self.assertEqual(3, len(objects.DeviceProfile.list(self.context)))

    def test_a_batch_past_the_limit_creates_nothing(self):
        self._create('one')
        error = self.assertRaises(exception.QuotaExceeded, self._create,
                                  'two', 'three', 'four')
        self.assertIn('requested 3, used 1, limit 3', error.message)
        self.assertEqual(['one'], [profile.name for profile in
                                   objects.DeviceProfile.list(self.context)])

    def test_deleting_a_profile_gives_its_place_back(self):
        self._create('one', 'two', 'three')
        device_profiles.delete(self.context, ['two'])
        self._create('four')

    def test_recheck_deletes_what_a_concurrent_create_pushed_over(self):
        limits = {'device_profiles': 2}
        deltas = {'device_profiles': 2}
        created = device_profiles._create_rows(
            self.context, [{'name': 'mine-1', 'groups': [{}]},
                           {'name': 'mine-2', 'groups': [{}]}],
            limits, deltas)
        records.make_device_profile(self.context, name='theirs')

        self.assertRaises(exception.QuotaExceeded,
                          device_profiles._recheck_quota, self.context,
                          created, limits, deltas)
        self.assertEqual(['theirs'], [profile.name for profile in
                                      objects.DeviceProfile.list(
                                          self.context)])
