"""conductor.arqs.record_bind of a bind recorded already, on every backend.

A client that lost the answer to its bind (a 503 that says the outcome is
unknown, a dropped connection) sends it again: the very same binding on
ARQs recorded for it (BindStarted) or Bound by it is answered as the first
one was, changes nothing and starts no second bind; any other binding of
such an ARQ is still a 409.
"""

from oslo_utils import uuidutils

from cyborg import exception
from cyborg import objects
from cyborg.tests.unit.conductor import test_arqs
from cyborg.tests.unit.db import records

_binding = test_arqs._binding


class RepeatedBindTests(test_arqs.ARQsTestCase):
    """The same bind twice: one recorded, one submitted, one history."""

    def _recorded(self, count=2):
        """``count`` ARQs recorded as BindStarted for one instance: their
        uuids and bindings."""
        uuids = self._create(count)
        instance = uuidutils.generate_uuid()
        rp_uuid = uuidutils.generate_uuid()
        bindings = {uuid: _binding(instance, rp_uuid) for uuid in uuids}
        first = self._bind(self.nova, bindings)
        self.assertFalse(first.repeated)
        return uuids, bindings

    def _rows(self, uuids):
        return [objects.ARQ.get_by_uuid(self.admin, uuid).obj_to_primitive()
                for uuid in uuids]

    def test_the_same_bind_on_bind_started_arqs_changes_nothing(self):
        uuids, bindings = self._recorded()
        before = self._rows(uuids)

        count, again = self._statements(self._bind, self.nova,
                                        dict(bindings))

        self.assertTrue(again.repeated)
        self.assertEqual(sorted(uuids), again.arq_uuids)
        self.assertIsNone(again.claimed)
        self.assertEqual([sorted(uuids)], self.binder.submitted)
        self.assertEqual(before, self._rows(uuids))
        # The locking read and nothing else.
        self.assertEqual(1, count)

    def test_the_same_bind_on_a_bound_arq_changes_nothing(self):
        tree = records.DeviceTree(self.admin, handles=1)
        uuid = self._create(1)[0]
        binding = _binding(uuidutils.generate_uuid(), tree.deployable.rp_uuid)
        self._bind(self.nova, {uuid: binding})
        arq = objects.ARQ.get_by_uuid(self.admin, uuid)
        arq.state = 'Bound'
        arq.attach_handle_id = tree.attach_handles[0].id
        arq.save(self.admin)
        before = self._rows([uuid])

        again = self._bind(self.nova, {uuid: dict(binding)})

        self.assertTrue(again.repeated)
        self.assertEqual(before, self._rows([uuid]))
        self.assertEqual(1, len(self.binder.submitted))

    def test_the_same_bind_with_upper_case_uuids_is_a_repeat(self):
        uuids, bindings = self._recorded(1)
        binding = bindings[uuids[0]]
        shouted = {uuids[0].upper(): dict(
            binding, instance_uuid=binding['instance_uuid'].upper(),
            device_rp_uuid=binding['device_rp_uuid'].upper())}
        self.assertTrue(self._bind(self.nova, shouted).repeated)

    def test_another_binding_of_a_recorded_arq_is_409(self):
        uuids, bindings = self._recorded(1)
        uuid = uuids[0]
        before = self._rows(uuids)
        for name, value in (('hostname', 'compute-2'),
                            ('device_rp_uuid', uuidutils.generate_uuid()),
                            ('instance_uuid', uuidutils.generate_uuid())):
            other = {uuid: dict(bindings[uuid], **{name: value})}
            error = self.assertRaises(exception.Conflict, self._bind,
                                      self.nova, other)
            self.assertEqual(409, error.code)
            self.assertIn('in state BindStarted', error.message)
        self.assertEqual(before, self._rows(uuids))
        self.assertEqual(1, len(self.binder.submitted))

    def test_a_project_id_must_match_too(self):
        uuid = self._create(1)[0]
        binding = dict(_binding(uuidutils.generate_uuid()),
                       project_id='elsewhere')
        self._bind(self.admin, {uuid: binding})

        self.assertTrue(self._bind(self.admin, {uuid: dict(binding)}).repeated)
        # Without project_id the ARQ keeps its project: the same bind.
        without = {name: value for name, value in binding.items()
                   if name != 'project_id'}
        self.assertTrue(self._bind(self.admin, {uuid: without}).repeated)
        error = self.assertRaises(
            exception.Conflict, self._bind, self.admin,
            {uuid: dict(binding, project_id='yet-another')})
        self.assertEqual(409, error.code)
        self.assertEqual(1, len(self.binder.submitted))

    def test_a_recorded_arq_with_a_new_one_is_409(self):
        # One bind recorded; a request naming it and an Initial ARQ is not
        # a repeat of anything: nothing changes.
        uuids, bindings = self._recorded(1)
        extra = self._create(1)[0]
        bindings[extra] = dict(bindings[uuids[0]])
        error = self.assertRaises(exception.Conflict, self._bind, self.nova,
                                  bindings)
        self.assertIn(uuids[0], error.message)
        self.assertEqual(['Initial'], self._states([extra]))
        self.assertEqual(1, len(self.binder.submitted))

    def test_the_same_bind_on_a_failed_bind_is_409(self):
        uuids, bindings = self._recorded(1)
        arq = objects.ARQ.get_by_uuid(self.admin, uuids[0])
        arq.state = 'BindFailed'
        arq.save(self.admin)
        error = self.assertRaises(exception.Conflict, self._bind, self.nova,
                                  dict(bindings))
        self.assertIn('in state BindFailed', error.message)

    def test_the_same_bind_of_another_projects_arq_is_404(self):
        uuid = self._create(1, self.other)[0]
        binding = _binding(uuidutils.generate_uuid())
        self._bind(self.admin, {uuid: binding})
        self.assertRaises(exception.ResourceNotFound, self._bind,
                          self.member, {uuid: dict(binding)})


class RepeatedBindTestsMySQL(RepeatedBindTests):

    backend = 'mysql'


class RepeatedBindTestsPostgreSQL(RepeatedBindTests):

    backend = 'postgresql'
