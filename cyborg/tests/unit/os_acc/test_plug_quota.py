"""os-acc plugs count against the project's ARQ quota as API creates do.

A plug creates the instance's ARQs: with ``[quota] driver = local`` the
accelerators they hold are limited per project exactly as
``POST /v2/accelerator_requests`` limits them (the conductor's
``QuotaExceeded``, 403, with the same message), and a refused plug leaves
nothing: no ARQ, no handle in use. A real conductor, agent and Placement
(``compute_node``), on SQLite, MariaDB and PostgreSQL.
"""

import uuid

import fixtures

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg.conductor import arqs
from cyborg.conductor import os_acc_calls
from cyborg.tests.unit.db import records
from cyborg.tests.unit.os_acc import compute_node
import os_acc

FPGA_SPECS = compute_node.FPGA_SPECS
PROJECT = 'project-quota'
OTHER_PROJECT = 'project-other'


def instance_info(project_id=PROJECT):
    return {'uuid': str(uuid.uuid4()), 'name': 'vm', 'project_id': project_id,
            'image_uuid': str(uuid.uuid4())}


class PlugQuotaTests(compute_node.ComputeNodeTestsBase):

    def setUp(self):
        super().setUp()
        # The conductor reads [quota] when it starts.
        self.flags(driver='local', local_limits={'class:FPGA': 2},
                   group='quota')
        self.restart_conductor()

    def plug(self, instance, specs=FPGA_SPECS, provider=1):
        return os_acc.plug(instance, {'uuid': self.providers[provider]},
                           specs)

    def assert_refused(self, instance, specs=FPGA_SPECS, used=2):
        """The plug fails with the API create's quota error; nothing left."""
        handles = self.handles_in_use()
        arq_uuids = [row.uuid for row in self.arq_rows()]
        error = self.assertRaises(os_acc.OsAccError, self.plug, instance,
                                  specs)
        self.assertIn('QuotaExceeded', str(error))
        self.assertIn('Quota exceeded for class:FPGA: requested %s, used %d, '
                      'limit 2' % (specs['resources:FPGA'], used),
                      str(error))
        # The conductor's error is the API create's: 403.
        self.assertIsInstance(error.__cause__, exception.QuotaExceeded)
        self.assertEqual(403, error.__cause__.code)
        self.assertEqual([], self.arq_rows(instance['uuid']))
        self.assertEqual(arq_uuids, [row.uuid for row in self.arq_rows()])
        self.assertEqual(handles, self.handles_in_use())

    def test_plugs_up_to_the_limit_then_refused(self):
        for _ in range(2):
            self.assertEqual(1, len(self.plug(instance_info())))

        self.assert_refused(instance_info())

    def test_a_plug_past_the_limit_at_once_makes_nothing(self):
        self.assert_refused(instance_info(), {'resources:FPGA': '3'},
                            used=0)

    def test_plugs_and_api_creates_share_the_usage(self):
        context = cyborg_context.RequestContext(project_id=PROJECT,
                                                is_admin=True)
        profile = records.make_device_profile(
            self.context, groups=[{'resources:FPGA': '1'}])
        arqs.create(context, profile.name, quotas=self.conductor.quotas)
        self.plug(instance_info())

        # The API's create sees the plug's ARQ, the plug the API's.
        error = self.assertRaises(exception.QuotaExceeded, arqs.create,
                                  context, profile.name,
                                  quotas=self.conductor.quotas)
        self.assertEqual('Quota exceeded for class:FPGA: requested 1, used 2, '
                         'limit 2', error.message)
        self.assert_refused(instance_info())

    def test_each_project_has_its_own_usage(self):
        for _ in range(2):
            self.plug(instance_info())

        self.assertEqual(1, len(self.plug(instance_info(OTHER_PROJECT))))

    def test_unplug_gives_the_accelerators_back(self):
        first = instance_info()
        for instance in (first, instance_info()):
            self.plug(instance)
        self.assert_refused(instance_info())

        self.assertEqual(1, os_acc.unplug(first))

        self.assertEqual(1, len(self.plug(instance_info())))

    def test_a_second_plug_of_a_plugged_instance_takes_nothing_more(self):
        instance = instance_info()
        self.plug(instance)
        self.plug(instance_info())

        # At the limit: the same plug again answers from its Bound ARQs.
        self.assertEqual(1, len(self.plug(instance)))
        self.assertEqual(1, len(self.arq_rows(instance['uuid'])))


    def test_the_recheck_deletes_what_a_concurrent_create_pushed_over(self):
        # Another request of the project commits an ARQ between the plug's
        # transaction and its re-check: the plug's ARQs are deleted before
        # any bind, and it fails as an API create would.
        self.plug(instance_info())
        profile = records.make_device_profile(
            self.context, groups=[{'resources:FPGA': '1'}])
        start = os_acc_calls._start
        concurrent = []

        def then_another_create(*args):
            answer = start(*args)
            concurrent.append(records.make_arq(self.context, profile,
                                               project_id=PROJECT))
            return answer

        self.useFixture(fixtures.MockPatchObject(
            os_acc_calls, '_start', side_effect=then_another_create))
        handles = self.handles_in_use()
        instance = instance_info()

        error = self.assertRaises(os_acc.OsAccError, self.plug, instance)

        self.assertIn('Quota exceeded for class:FPGA: requested 1, used 2, '
                      'limit 2', str(error))
        self.assertEqual([], self.arq_rows(instance['uuid']))
        self.assertEqual(handles, self.handles_in_use())
        self.assertIn(concurrent[0].uuid,
                      [row.uuid for row in self.arq_rows()])


class PlugQuotaMySQLTests(PlugQuotaTests):

    backend = 'mysql'


class PlugQuotaPostgreSQLTests(PlugQuotaTests):

    backend = 'postgresql'
