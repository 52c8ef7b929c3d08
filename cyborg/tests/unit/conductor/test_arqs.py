"""conductor.arqs: create, bind record, unbind and delete, on every backend.

Each workflow is one transaction, all or nothing, whose number of SQL
statements is the same for 1 ARQ as for 50; state changes follow the
contract's transition table; non-admin callers act on their project only.
"""

import threading

import fixtures
import sqlalchemy as sa
from oslo_utils import uuidutils

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import objects
from cyborg.conductor import arqs
from cyborg.db.queries import arqs as arq_queries
from cyborg.tests.unit.api.real_app import TRANSACTION_CONTROL
from cyborg.tests.unit.conductor import projects
from cyborg.tests.unit.conductor import recording_binder
from cyborg.tests.unit.db import records

PROJECT = projects.PROJECT
OTHER_PROJECT = projects.OTHER_PROJECT


def _binding(instance_uuid, rp_uuid=None, hostname='compute-1'):
    return {'hostname': hostname,
            'device_rp_uuid': rp_uuid or uuidutils.generate_uuid(),
            'instance_uuid': instance_uuid}


class ARQsTestCase(projects.ProjectsTestCase):
    """A profile of two groups, a stand-in binder and statement counting."""

    def setUp(self):
        super().setUp()
        self.nova = cyborg_context.RequestContext(
            project_id=PROJECT, roles=['member'], has_service_token=True)
        self.profile = records.make_device_profile(
            self.admin, name='two-groups',
            groups=[{'resources:FPGA': '2', 'resources:CUSTOM_QAT': '1',
                     'trait:CUSTOM_FPGA_XILINX': 'required'},
                    {'resources:PGPU': '1', 'accel:function_id': 'x'}])
        self.binder = recording_binder.RecordingBinder()
        self.statements = []

    def _count(self, connection, cursor, statement, parameters, context,
               executemany):
        if statement.split(None, 1)[0].upper() not in TRANSACTION_CONTROL:
            self.statements.append(statement)

    def _statements(self, function, *args, **kwargs):
        """(number of SQL statements, result) of one call."""
        self.statements = []
        sa.event.listen(self.database.engine, 'before_cursor_execute',
                        self._count)
        try:
            result = function(*args, **kwargs)
        finally:
            sa.event.remove(self.database.engine, 'before_cursor_execute',
                            self._count)
        return len(self.statements), result

    def _states(self, uuids):
        return [objects.ARQ.get_by_uuid(self.admin, uuid).state
                for uuid in uuids]

    def _create(self, count, context=None):
        profile = records.make_device_profile(
            self.admin, groups=[{'resources:FPGA': str(count)}])
        return [arq.uuid for arq in arqs.create(context or self.member,
                                                profile.name)]

    def _bind(self, context, bindings):
        """Record a bind and submit it, as the conductor's bind_arqs does."""
        recorded = arqs.record_bind(context, bindings,
                                    lease=self.binder.lease,
                                    claim=self.binder.claim_for_recording)
        if not recorded.repeated:
            self.binder.submit(recorded.arq_uuids, recorded.claimed)
        return recorded


class CreateTests(ARQsTestCase):
    """arqs.create: one transaction, the ARQs a profile asks for."""

    def test_create_makes_the_sum_of_resources_per_group(self):
        created = arqs.create(self.member, 'two-groups')

        # 2 + 1 in group 0 (not doubled for Xilinx), 1 in group 1.
        self.assertEqual([0, 0, 0, 1],
                         [arq.device_profile_group_id for arq in created])
        self.assertEqual({'Initial'}, {arq.state for arq in created})
        self.assertEqual({PROJECT}, {arq.project_id for arq in created})
        self.assertEqual({'two-groups'},
                         {arq.device_profile_name for arq in created})
        self.assertEqual(4, len({arq.uuid for arq in created}))
        self.assertEqual({}, created[0].attach_handle_info)

    def test_create_of_one_group(self):
        created = arqs.create(self.member, 'two-groups', 1)
        self.assertEqual([1], [arq.device_profile_group_id for arq in created])

    def test_create_refuses_a_group_out_of_range(self):
        for group_id in (2, -1, True):
            error = self.assertRaises(exception.Invalid, arqs.create,
                                      self.member, 'two-groups', group_id)
            self.assertEqual(400, error.code)
        self.assertEqual([], objects.ARQ.list(self.admin))

    def test_create_of_an_unknown_or_empty_profile_is_404(self):
        for name in ('nope', ''):
            error = self.assertRaises(exception.ResourceNotFound, arqs.create,
                                      self.member, name)
            self.assertEqual(404, error.code)

    def test_create_of_a_profile_without_accelerators_is_400(self):
        records.make_device_profile(self.admin, name='none',
                                    groups=[{'trait:CUSTOM_X': 'required'}])
        error = self.assertRaises(exception.Invalid, arqs.create,
                                  self.member, 'none')
        self.assertEqual(400, error.code)
        self.assertEqual([], objects.ARQ.list(self.admin))

    def test_create_costs_the_same_statements_for_1_and_50(self):
        small = records.make_device_profile(
            self.admin, groups=[{'resources:FPGA': '1'}])
        large = records.make_device_profile(
            self.admin, groups=[{'resources:FPGA': '30'},
                                {'resources:PGPU': '20'}])
        small_count, small_arqs = self._statements(arqs.create, self.member,
                                                   small.name)
        large_count, large_arqs = self._statements(arqs.create, self.member,
                                                   large.name)
        self.assertEqual(1, len(small_arqs))
        self.assertEqual(50, len(large_arqs))
        self.assertEqual(small_count, large_count)
        self.assertLessEqual(large_count, 4)


class BindRecordTests(ARQsTestCase):
    """arqs.record_bind: BindStarted recorded, checked, all or nothing."""

    def test_bind_records_bind_started_and_submits_once(self):
        uuids = self._create(3)
        instance = uuidutils.generate_uuid()
        rp_uuid = uuidutils.generate_uuid()
        self._bind(self.nova,
                   {uuid: _binding(instance, rp_uuid) for uuid in uuids})

        self.assertEqual([sorted(uuids)], self.binder.submitted)
        for uuid in uuids:
            arq = objects.ARQ.get_by_uuid(self.admin, uuid)
            self.assertEqual('BindStarted', arq.state)
            self.assertEqual(('compute-1', rp_uuid, instance, PROJECT),
                             (arq.hostname, arq.device_rp_uuid,
                              arq.instance_uuid, arq.project_id))
            self.assertIsNotNone(arq.updated_at)

    def test_bind_sets_project_id_for_an_admin_only(self):
        uuid = self._create(1)[0]
        binding = dict(_binding(uuidutils.generate_uuid()),
                       project_id='elsewhere')
        error = self.assertRaises(exception.NotAuthorized, self._bind,
                                  self.nova, {uuid: binding})
        self.assertEqual(403, error.code)
        # The rule and message of the API's PATCH (cyborg.policies.arq).
        self.assertEqual('Only an administrator may set the project_id of '
                         'an ARQ.', error.message)
        self.assertEqual(['Initial'], self._states([uuid]))

        self._bind(self.admin, {uuid: binding})
        self.assertEqual('elsewhere',
                         objects.ARQ.get_by_uuid(self.admin,
                                                    uuid).project_id)

    def test_bind_refuses_a_malformed_binding_as_the_api_does(self):
        uuid = self._create(1)[0]
        for binding, message in (
                (dict(_binding(uuidutils.generate_uuid()),
                      device_rp_uuid='rp-1'),
                 "device_rp_uuid of ARQ %s must be a UUID, not 'rp-1'"),
                ({'hostname': 'compute-1'},
                 'The bind of ARQ %s lacks /device_rp_uuid, /instance_uuid'),
                (dict(_binding(uuidutils.generate_uuid()), hostname=''),
                 "hostname of ARQ %s must be a non-empty string of at most "
                 "255 characters, not ''")):
            error = self.assertRaises(exception.Invalid, self._bind,
                                      self.nova, {uuid: binding})
            self.assertEqual(400, error.code)
            self.assertEqual(message % uuid, error.message)
        self.assertEqual(['Initial'], self._states([uuid]))
        self.assertEqual([], self.binder.submitted)

    def test_bind_of_a_missing_arq_changes_nothing(self):
        uuids = self._create(2)
        missing = uuidutils.generate_uuid()
        instance = uuidutils.generate_uuid()
        error = self.assertRaises(
            exception.ResourceNotFound, self._bind, self.nova,
            {uuid: _binding(instance) for uuid in uuids + [missing]})
        self.assertEqual(404, error.code)
        self.assertIn(missing, error.message)
        self.assertEqual(['Initial', 'Initial'], self._states(uuids))
        self.assertEqual([], self.binder.submitted)

    def test_bind_from_a_wrong_state_is_409_naming_it(self):
        uuids = self._create(2)
        self._bind(self.nova,
                   {uuids[0]: _binding(uuidutils.generate_uuid())})
        error = self.assertRaises(
            exception.Conflict, self._bind, self.nova,
            {uuid: _binding(uuidutils.generate_uuid()) for uuid in uuids})
        self.assertEqual(409, error.code)
        self.assertIn(uuids[0], error.message)
        self.assertIn('BindStarted', error.message)
        self.assertEqual(['BindStarted', 'Initial'], self._states(uuids))

    def test_bind_to_an_instance_with_bound_arqs_is_400(self):
        uuids = self._create(2)
        instance = uuidutils.generate_uuid()
        self._bind(self.nova, {uuids[0]: _binding(instance)})
        error = self.assertRaises(exception.Invalid, self._bind, self.nova,
                                  {uuids[1]: _binding(instance)})
        self.assertEqual(400, error.code)
        self.assertIn(instance, error.message)
        self.assertEqual(['BindStarted', 'Initial'], self._states(uuids))

    def test_bind_of_another_projects_arq_is_404(self):
        uuid = self._create(1, self.other)[0]
        self.assertRaises(exception.ResourceNotFound, self._bind, self.member,
                          {uuid: _binding(uuidutils.generate_uuid())})
        # Nova (service role) binds ARQs of every project.
        service = cyborg_context.RequestContext(
            project_id=PROJECT, roles=['service'], has_service_token=True)
        self._bind(service, {uuid: _binding(uuidutils.generate_uuid())})
        self.assertEqual(['BindStarted'], self._states([uuid]))

    def test_bind_after_unbind_is_allowed(self):
        uuid = self._create(1)[0]
        self._bind(self.nova, {uuid: _binding(uuidutils.generate_uuid())})
        arqs.unbind(self.nova, [uuid])
        self._bind(self.nova, {uuid: _binding(uuidutils.generate_uuid())})
        self.assertEqual(['BindStarted'], self._states([uuid]))

    def test_bind_costs_the_same_statements_for_1_and_50(self):
        small = self._create(1)
        large = self._create(50)
        counts = []
        for uuids in (small, large):
            instance = uuidutils.generate_uuid()
            count, _ = self._statements(
                self._bind, self.nova,
                {uuid: _binding(instance) for uuid in uuids})
            counts.append(count)
        self.assertEqual(counts[0], counts[1])
        self.assertLessEqual(counts[1], 4)
        self.assertEqual(['BindStarted'] * 50, self._states(large))

    def test_concurrent_binds_of_one_arq_have_one_winner(self):
        uuid = self._create(1)[0]
        outcomes = []
        barrier = threading.Barrier(4)

        def bind_once():
            barrier.wait()
            try:
                self._bind(self.nova,
                           {uuid: _binding(uuidutils.generate_uuid())})
                outcomes.append('bound')
            except (exception.Conflict, exception.Invalid) as error:
                outcomes.append(error.code)

        threads = [threading.Thread(target=bind_once) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        self.assertEqual(1, outcomes.count('bound'), outcomes)
        self.assertEqual(1, len(self.binder.submitted))

    def test_concurrent_binds_of_one_instance_have_one_winner(self):
        # Different ARQs, one instance: the already-bound check holds until
        # commit. Each bind waits (a little) in front of its UPDATE for the
        # other to have made its check too: without the per-instance lock
        # both would find the instance free and both would bind.
        uuids = self._create(2)
        instance = uuidutils.generate_uuid()
        outcomes = []
        checked = threading.Barrier(len(uuids), timeout=3)
        start_binds = arq_queries.start_binds

        def start_binds_after_both_checked(*args, **kwargs):
            try:
                checked.wait()
            except threading.BrokenBarrierError:
                pass  # The other bind is waiting for this one's commit.
            return start_binds(*args, **kwargs)

        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.db.queries.arqs.start_binds',
            start_binds_after_both_checked))

        def bind_one(uuid):
            try:
                self._bind(self.nova, {uuid: _binding(instance)})
                outcomes.append('bound')
            except exception.Invalid as error:
                outcomes.append(error.code)

        threads = [threading.Thread(target=bind_one, args=(uuid,))
                   for uuid in uuids]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        self.assertEqual(['bound', 400], sorted(
            outcomes, key=lambda outcome: outcome != 'bound'))
        self.assertEqual(1, self._states(uuids).count('BindStarted'))


class BoundARQTestCase(ARQsTestCase):
    """Tests that start from a Bound ARQ holding a handle."""

    def _bound_arq_with_handle(self):
        """An ARQ in state Bound holding a handle in use, as the binder leaves it."""
        tree = records.DeviceTree(self.admin, handles=1)
        uuid = self._create(1)[0]
        self._bind(self.nova, {uuid: _binding(
            uuidutils.generate_uuid(), tree.deployable.rp_uuid)})
        arq = objects.ARQ.get_by_uuid(self.admin, uuid)
        handle = tree.attach_handles[0]
        handle.in_use = True
        handle.save(self.admin)
        arq.state = 'Bound'
        arq.attach_handle_id = handle.id
        arq.save(self.admin)
        return uuid, handle


class UnbindTests(BoundARQTestCase):
    """arqs.unbind: Unbound, the handles freed."""

    def test_unbind_frees_the_handle(self):
        uuid, handle = self._bound_arq_with_handle()
        self.assertEqual('TEST_PCI', objects.ARQ.get_by_uuid(
            self.admin, uuid).attach_handle_type)

        arqs.unbind(self.nova, [uuid])

        arq = objects.ARQ.get_by_uuid(self.admin, uuid)
        self.assertEqual('Unbound', arq.state)
        self.assertIsNone(arq.hostname)
        self.assertIsNone(arq.device_rp_uuid)
        self.assertIsNone(arq.instance_uuid)
        self.assertIsNone(arq.attach_handle_id)
        self.assertEqual({}, arq.attach_handle_info)
        self.assertFalse(objects.AttachHandle.get_by_uuid(
            self.admin, handle.uuid).in_use)

    def test_unbind_of_an_unbound_arq_is_409_and_changes_nothing(self):
        uuids = self._create(2)
        arqs.unbind(self.nova, [uuids[0]])
        error = self.assertRaises(exception.Conflict, arqs.unbind, self.nova,
                                  uuids)
        self.assertIn(uuids[0], error.message)
        self.assertIn('Unbound', error.message)
        self.assertEqual(['Unbound', 'Initial'], self._states(uuids))

    def test_unbind_of_a_missing_arq_is_404(self):
        uuids = self._create(1)
        self.assertRaises(exception.ResourceNotFound, arqs.unbind, self.nova,
                          uuids + [uuidutils.generate_uuid()])
        self.assertEqual(['Initial'], self._states(uuids))

    def test_unbind_of_another_projects_arq_is_404(self):
        uuid = self._create(1, self.other)[0]
        self.assertRaises(exception.ResourceNotFound, arqs.unbind,
                          self.member, [uuid])
        self.assertEqual(['Initial'], self._states([uuid]))

    def test_unbind_costs_the_same_statements_for_1_and_50(self):
        counts = []
        for size in (1, 50):
            uuids = self._create(size)
            self._bind(self.nova, {
                uuid: _binding(uuidutils.generate_uuid()) for uuid in uuids})
            count, _ = self._statements(arqs.unbind, self.nova, uuids)
            counts.append(count)
            self.assertEqual(['Unbound'] * size, self._states(uuids))
        self.assertEqual(counts[0], counts[1])
        self.assertLessEqual(counts[1], 4)


class DeleteTests(BoundARQTestCase):
    """arqs.delete: by uuids (all or nothing) or by instance."""

    def test_delete_by_uuids_is_all_or_nothing(self):
        uuids = self._create(2)
        missing = uuidutils.generate_uuid()
        error = self.assertRaises(exception.ResourceNotFound, arqs.delete,
                                  self.nova, arq_uuids=uuids + [missing])
        self.assertIn(missing, error.message)
        self.assertEqual(['Initial', 'Initial'], self._states(uuids))
        arqs.delete(self.nova, arq_uuids=uuids)
        self.assertEqual([], objects.ARQ.list(self.admin))

    def test_delete_needs_exactly_one_selector(self):
        self.assertRaises(exception.Invalid, arqs.delete, self.nova)
        self.assertRaises(exception.Invalid, arqs.delete, self.nova,
                          arq_uuids=[uuidutils.generate_uuid()],
                          instance_uuid=uuidutils.generate_uuid())

    def test_delete_by_instance_frees_handles_and_is_idempotent(self):
        uuid, handle = self._bound_arq_with_handle()
        instance = objects.ARQ.get_by_uuid(self.admin, uuid).instance_uuid
        keep = self._create(1)[0]

        arqs.delete(self.nova, instance_uuid=instance)
        arqs.delete(self.nova, instance_uuid=instance)

        self.assertEqual([keep], [arq.uuid for arq in
                                  objects.ARQ.list(self.admin)])
        self.assertFalse(objects.AttachHandle.get_by_uuid(
            self.admin, handle.uuid).in_use)

    def test_delete_of_a_bound_arq_needs_a_service_token(self):
        uuid, _ = self._bound_arq_with_handle()
        error = self.assertRaises(exception.NotAuthorized, arqs.delete,
                                  self.member, arq_uuids=[uuid])
        self.assertEqual(403, error.code)
        self.assertEqual(['Bound'], self._states([uuid]))
        arqs.delete(self.nova, arq_uuids=[uuid])
        self.assertEqual([], objects.ARQ.list(self.admin))

    def test_delete_of_another_projects_arqs_is_404_or_nothing(self):
        uuid = self._create(1, self.other)[0]
        self.assertRaises(exception.ResourceNotFound, arqs.delete,
                          self.member, arq_uuids=[uuid])
        instance = uuidutils.generate_uuid()
        self._bind(self.admin, {uuid: _binding(instance)})
        arqs.delete(self.nova, instance_uuid=instance)
        # Nova's user token is of project-a: the service-token holder
        # still has no service role here, so project-b's ARQ stays.
        self.assertEqual([uuid], [arq.uuid for arq in
                                  objects.ARQ.list(self.admin)])

    def test_delete_costs_the_same_statements_for_1_and_50(self):
        counts = []
        for size in (1, 50):
            uuids = self._create(size)
            count, _ = self._statements(arqs.delete, self.nova,
                                        arq_uuids=uuids)
            counts.append(count)
        self.assertEqual(counts[0], counts[1])
        self.assertLessEqual(counts[1], 4)
        self.assertEqual([], objects.ARQ.list(self.admin))


class CreateTestsMySQL(CreateTests):

    backend = 'mysql'


class CreateTestsPostgreSQL(CreateTests):

    backend = 'postgresql'


class BindRecordTestsMySQL(BindRecordTests):

    backend = 'mysql'


class BindRecordTestsPostgreSQL(BindRecordTests):

    backend = 'postgresql'


class UnbindTestsMySQL(UnbindTests):

    backend = 'mysql'


class UnbindTestsPostgreSQL(UnbindTests):

    backend = 'postgresql'


class DeleteTestsMySQL(DeleteTests):

    backend = 'mysql'


class DeleteTestsPostgreSQL(DeleteTests):

    backend = 'postgresql'
