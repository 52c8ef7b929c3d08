"""The ARQ ownership rules of cyborg.policies.arq, shared by API and conductor."""

from cyborg import exception
from cyborg.policies import arq
from cyborg.tests.unit.policies import test_policies

ARQ_UUID = '7c1d3c2a-9f3e-4c1a-8d6b-3e2f1a0b9c8d'


def _binding(**extra):
    return dict({'hostname': 'compute-1',
                 'device_rp_uuid': '2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e',
                 'instance_uuid': '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d'},
                **extra)


class TestOwnerFilter(test_policies.PolicyTestCase):

    def test_a_member_acts_on_its_own_project_only(self):
        context = test_policies.make_context(['member', 'reader'])
        self.assertEqual('project-1', arq.owner_filter(context))

    def test_admins_and_the_service_role_act_on_every_project(self):
        admin = test_policies.make_context(['admin'], is_admin=True)
        service = test_policies.make_context(['service'])
        self.assertIsNone(arq.owner_filter(admin))
        self.assertIsNone(arq.owner_filter(service))

    def test_an_arq_of_another_project_is_not_found(self):
        error = arq.not_found(ARQ_UUID)
        self.assertIsInstance(error, exception.ResourceNotFound)
        self.assertEqual(404, error.code)
        self.assertEqual('ARQ not found with uuid=%s' % ARQ_UUID,
                         error.message)


class TestCheckProjectIds(test_policies.PolicyTestCase):

    def test_a_non_admin_may_not_set_a_project(self):
        context = test_policies.make_context(['member', 'service'])
        error = self.assertRaises(
            exception.PolicyNotAuthorized, arq.check_project_ids, context,
            {ARQ_UUID: _binding(project_id='other')})
        self.assertEqual(403, error.code)
        self.assertEqual('Only an administrator may set the project_id of '
                         'an ARQ.', error.message)

    def test_a_non_admin_may_bind_without_a_project(self):
        context = test_policies.make_context(['member', 'service'])
        arq.check_project_ids(context, {ARQ_UUID: _binding()})
        arq.check_project_ids(context, {ARQ_UUID: _binding(project_id=None)})

    def test_an_admin_may_set_a_project(self):
        admin = test_policies.make_context(['admin'], is_admin=True)
        arq.check_project_ids(admin, {ARQ_UUID: _binding(project_id='other')})
