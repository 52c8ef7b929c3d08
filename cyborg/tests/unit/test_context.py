"""RequestContext: what survives a trip over RPC, and elevated copies."""

from cyborg import context
from cyborg.tests import base


class TestRequestContext(base.TestCase):

    def test_service_token_flag_defaults_to_false(self):
        self.assertFalse(context.RequestContext().has_service_token)
        self.assertFalse(context.get_admin_context().has_service_token)

    def test_round_trip_through_dict_keeps_identity_and_service_token(self):
        original = context.RequestContext(
            user_id='u1', project_id='p1', roles=['member'],
            has_service_token=True)
        copy = context.RequestContext.from_dict(original.to_dict())
        self.assertTrue(copy.has_service_token)
        self.assertEqual(('u1', 'p1', ['member']),
                         (copy.user_id, copy.project_id, copy.roles))
        self.assertEqual(original.request_id, copy.request_id)

    def test_elevated_adds_admin_without_changing_the_original(self):
        original = context.RequestContext(project_id='p1', roles=['reader'])
        elevated = original.elevated()
        self.assertTrue(elevated.is_admin)
        self.assertIn('admin', elevated.roles)
        self.assertNotIn('admin', original.roles)
        self.assertFalse(original.is_admin)
