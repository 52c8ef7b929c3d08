"""ARQ objects on SQLite: joined profile and attach handle fields, updates."""

from oslo_db import exception as db_exception

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import objects
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.db import records

INSTANCE = '0d7b9d43-30f1-4a3c-9f6e-d1a8d1bc4e0f'


class ARQTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(database.Database())
        self.context = cyborg_context.get_admin_context()
        self.tree = records.DeviceTree(self.context)
        self.profile = records.make_device_profile(self.context, name='fpga')

    def _bind(self, arq, attach_handle):
        arq.state = 'Bound'
        arq.hostname = 'compute-1'
        arq.device_rp_uuid = self.tree.deployable.rp_uuid
        arq.instance_uuid = INSTANCE
        arq.attach_handle_id = attach_handle.id
        arq.deployable_id = self.tree.deployable.id
        arq.save(self.context)

    def test_new_arq_is_initial_and_unbound(self):
        arq = records.make_arq(self.context, self.profile)

        self.assertEqual('Initial', arq.state)
        self.assertEqual('fpga', arq.device_profile_name)
        self.assertIsNone(arq.attach_handle_type)
        self.assertIsNone(arq.attach_handle_uuid)
        self.assertEqual({}, arq.attach_handle_info)

    def test_bound_arq_reads_its_attach_handle(self):
        arq = records.make_arq(self.context, self.profile)
        handle = records.make_attach_handle(
            self.context, self.tree.deployable, self.tree.controlpath_id,
            attach_info='{"bus": "0c", "device": "00", "domain": "0000", '
                        '"function": "7"}')

        self._bind(arq, handle)
        loaded = objects.ARQ.get_by_uuid(self.context, arq.uuid)

        for item in (arq, loaded):
            self.assertEqual('Bound', item.state)
            self.assertEqual('TEST_PCI', item.attach_handle_type)
            self.assertEqual(handle.uuid, item.attach_handle_uuid)
            self.assertEqual({'bus': '0c', 'device': '00', 'domain': '0000',
                              'function': '7'},
                             item.attach_handle_info)

    def test_list_filters_on_own_and_joined_fields(self):
        other_profile = records.make_device_profile(self.context, name='gpu')
        first = records.make_arq(self.context, self.profile)
        second = records.make_arq(self.context, self.profile)
        records.make_arq(self.context, other_profile)
        self._bind(second, self.tree.attach_handles[1])

        by_instance = objects.ARQ.list(
            self.context, filters={'instance_uuid': INSTANCE})
        by_profile = objects.ARQ.list(
            self.context, filters={'device_profile_name': 'fpga'})
        by_states = objects.ARQ.list(
            self.context, filters={'state': ['Initial', 'Unbound'],
                                   'device_profile_name': 'fpga'})

        self.assertEqual([second.uuid], [item.uuid for item in by_instance])
        self.assertEqual([first.uuid, second.uuid],
                         [item.uuid for item in by_profile])
        self.assertEqual([first.uuid], [item.uuid for item in by_states])

    def test_sort_and_page_on_a_joined_nullable_field(self):
        unbound = records.make_arq(self.context, self.profile)
        bound = records.make_arq(self.context, self.profile)
        self._bind(bound, self.tree.attach_handles[0])

        ascending = objects.ARQ.list(self.context,
                                        sort_key='attach_handle_uuid')
        after_unbound = objects.ARQ.list(
            self.context, sort_key='attach_handle_uuid', marker=unbound.uuid)
        descending = objects.ARQ.list(
            self.context, sort_key='attach_handle_uuid', sort_dir='desc',
            limit=1)

        self.assertEqual([unbound.uuid, bound.uuid],
                         [item.uuid for item in ascending])
        self.assertEqual([bound.uuid], [item.uuid for item in after_unbound])
        self.assertEqual([bound.uuid], [item.uuid for item in descending])

    def test_one_attach_handle_serves_one_arq(self):
        handle = self.tree.attach_handles[0]
        self._bind(records.make_arq(self.context, self.profile), handle)
        second = records.make_arq(self.context, self.profile)

        self.assertRaises(db_exception.DBDuplicateEntry, self._bind, second,
                          handle)
        self.assertIsNone(objects.ARQ.get_by_uuid(
            self.context, second.uuid).attach_handle_id)

    def test_removing_the_device_detaches_bound_arqs(self):
        arq = records.make_arq(self.context, self.profile)
        self._bind(arq, self.tree.attach_handles[0])

        self.tree.device.destroy(self.context)

        loaded = objects.ARQ.get_by_uuid(self.context, arq.uuid)
        self.assertIsNone(loaded.attach_handle_id)
        self.assertIsNone(loaded.deployable_id)
        self.assertIsNone(loaded.attach_handle_uuid)

    def test_destroy(self):
        arq = records.make_arq(self.context, self.profile)

        arq.destroy(self.context)

        self.assertRaises(exception.ResourceNotFound,
                          objects.ARQ.get_by_uuid, self.context, arq.uuid)

    def test_unknown_state_is_refused(self):
        self.assertRaises(ValueError, objects.ARQ, state='Exploded')
