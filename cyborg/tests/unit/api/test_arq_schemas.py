"""Validation of /v2/accelerator_requests bodies and queries."""

import microversion_parse
from oslo_utils import uuidutils

from cyborg import exception
from cyborg.api.schemas import arqs as schemas
from cyborg.tests import base

V2_0 = microversion_parse.Version(2, 0)
V2_1 = microversion_parse.Version(2, 1)
ARQ = '7c1d3c2a-9f3e-4c1a-8d6b-3e2f1a0b9c8d'
RP = '2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e'
INSTANCE = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d'
MAX_LIMIT = 1000
V2_5 = microversion_parse.Version(2, 5)
V2_6 = microversion_parse.Version(2, 6)


def _adds(**extra):
    operations = [{'path': '/hostname', 'op': 'add', 'value': 'compute-1'},
                  {'path': '/device_rp_uuid', 'op': 'add', 'value': RP},
                  {'path': '/instance_uuid', 'op': 'add', 'value': INSTANCE}]
    for name, value in extra.items():
        operations.append({'path': '/' + name, 'op': 'add', 'value': value})
    return operations


def _removes():
    return [{'path': path, 'op': 'remove'} for path in schemas.BIND_PATHS]


class TestCreateRequest(base.TestCase):

    def test_name_and_group(self):
        self.assertEqual(('dp', None), schemas.create_request(
            {'device_profile_name': 'dp', 'image_uuid': None,
             'device_profile_group_id': None, 'other': 1}))
        self.assertEqual(('dp', 2), schemas.create_request(
            {'device_profile_name': 'dp', 'device_profile_group_id': 2}))
        self.assertEqual(('dp', 1), schemas.create_request(
            {'device_profile_name': 'dp', 'device_profile_group_id': '1'}))

    def test_refused_bodies(self):
        for body in ([], 'dp', {}, {'device_profile_name': None},
                     {'device_profile_name': 3},
                     {'device_profile_name': 'dp',
                      'device_profile_group_id': -1},
                     {'device_profile_name': 'dp',
                      'device_profile_group_id': True},
                     {'device_profile_name': 'dp',
                      'device_profile_group_id': 'x'}):
            error = self.assertRaises(exception.InvalidParameterValue,
                                      schemas.create_request, body)
            self.assertEqual(400, error.code, body)

    def test_empty_name_is_left_to_the_conductor(self):
        # Upstream and tempest: an empty name is a 404 of the profile.
        self.assertEqual(('', None),
                         schemas.create_request({'device_profile_name': ''}))


class TestListQuery(base.TestCase):

    def test_instance_and_bind_state(self):
        query = schemas.list_query({'instance': INSTANCE,
                                    'bind_state': 'resolved', 'limit': '5'},
                                   MAX_LIMIT, V2_6)
        self.assertEqual({'instance_uuid': INSTANCE}, query.filters)
        self.assertEqual({'bind_state': 'resolved'}, query.extra)
        self.assertEqual(5, query.limit)

    def test_bind_state_without_instance_lists_as_upstream(self):
        query = schemas.list_query({'bind_state': 'resolved'}, MAX_LIMIT,
                                   V2_6)
        self.assertEqual({}, query.filters)
        self.assertEqual({'bind_state': 'resolved'}, query.extra)

    def test_refused_queries(self):
        for params in ({'instance': 'vm'},
                       {'instance': INSTANCE, 'bind_state': 'bound'},
                       {'instance': INSTANCE,
                        'bind_state': ['resolved', 'resolved']},
                       {'marker': 'x'}, {'limit': '0'}, {'state': 'Bound'}):
            self.assertRaises(exception.InvalidParameterValue,
                              schemas.list_query, params, MAX_LIMIT, V2_6)

    def test_holder_filters_from_2_6(self):
        dashless = INSTANCE.replace('-', '').upper()
        for name in ('device_uuid', 'deployable_uuid'):
            query = schemas.list_query({name: dashless}, MAX_LIMIT, V2_6)
            self.assertEqual({name: INSTANCE}, query.filters)
            self.assertEqual({}, query.extra)
            for bad in ('x', INSTANCE + 'x', '', [INSTANCE, INSTANCE]):
                error = self.assertRaises(
                    exception.InvalidParameterValue, schemas.list_query,
                    {name: bad}, MAX_LIMIT, V2_6)
                self.assertIn(name, error.message)
            error = self.assertRaises(
                exception.InvalidParameterValue, schemas.list_query,
                {name: INSTANCE}, MAX_LIMIT, V2_5)
            self.assertEqual('Unknown query parameter ' + name,
                             error.message)

    def test_page_size_is_bounded_by_the_max_limit_handed_in(self):
        self.assertEqual(7, schemas.list_query({}, 7, V2_5).limit)
        self.assertEqual(7, schemas.list_query({'limit': '7'}, 7, V2_5).limit)
        error = self.assertRaises(exception.InvalidParameterValue,
                                  schemas.list_query, {'limit': '8'}, 7, V2_5)
        self.assertEqual("limit must be an integer from 1 to 7, not '8'",
                         error.message)


class TestPatchRequest(base.TestCase):

    def test_bind(self):
        patch = schemas.patch_request({ARQ.upper(): _adds()}, V2_0)
        self.assertEqual({ARQ: {'hostname': 'compute-1',
                                'device_rp_uuid': RP,
                                'instance_uuid': INSTANCE}}, patch.bindings)
        self.assertEqual([], patch.unbinds)

    def test_unbind_of_several(self):
        other = uuidutils.generate_uuid()
        patch = schemas.patch_request({ARQ: _removes(), other: _removes()},
                                      V2_0)
        self.assertEqual({}, patch.bindings)
        self.assertEqual([ARQ, other], patch.unbinds)

    def test_project_id_from_2_1(self):
        patch = schemas.patch_request({ARQ: _adds(project_id='p1')}, V2_1)
        self.assertEqual('p1', patch.bindings[ARQ]['project_id'])
        error = self.assertRaises(exception.NotAcceptable,
                                  schemas.patch_request,
                                  {ARQ: _adds(project_id='p1')}, V2_0)
        self.assertEqual(406, error.code)
        self.assertEqual(schemas.PROJECT_ID_NEEDS_VERSION, error.message)

    def test_item_url_needs_its_own_key(self):
        self.assertEqual([ARQ], list(schemas.patch_request(
            {ARQ: _adds()}, V2_0, uuid=ARQ).bindings))
        other = uuidutils.generate_uuid()
        for body in ({other: _adds()}, {ARQ: _adds(), other: _adds()}):
            error = self.assertRaises(exception.InvalidParameterValue,
                                      schemas.patch_request, body, V2_0,
                                      uuid=ARQ)
            self.assertIn(ARQ, error.message)

    def _refused(self, body, *fragments):
        error = self.assertRaises(exception.InvalidParameterValue,
                                  schemas.patch_request, body, V2_1)
        for fragment in fragments:
            self.assertIn(fragment, error.message)

    def test_refused_documents(self):
        adds = _adds()
        self._refused({}, 'object')
        self._refused([adds], 'object')
        self._refused({'arq': adds}, "'arq' is not an ARQ uuid")
        self._refused({ARQ: []}, ARQ)
        self._refused({ARQ: adds[:2]}, ARQ, '/instance_uuid')
        self._refused({ARQ: _removes()[1:]}, ARQ, '/hostname')
        self._refused({ARQ: adds + [{'path': '/state', 'op': 'add',
                                     'value': 'Bound'}]}, ARQ, '/state')
        self._refused({ARQ: adds[:2] + [{'path': '/instance_uuid',
                                         'op': 'remove'}]}, ARQ, 'mixes')
        self._refused({ARQ: adds + adds[:1]}, ARQ, 'twice')
        self._refused({ARQ: [dict(adds[0], op='replace')] + adds[1:]},
                      ARQ, 'add or remove')
        self._refused({ARQ: [{'path': '/hostname', 'op': 'add'}] + adds[1:]},
                      ARQ, 'no value')
        self._refused({ARQ: adds[:1] + [dict(adds[1], value='rp')]
                       + adds[2:]}, ARQ, 'device_rp_uuid')
        self._refused({ARQ: adds[:2] + [dict(adds[2], value=7)]}, ARQ,
                      'instance_uuid')
        self._refused({ARQ: [dict(adds[0], value='')] + adds[1:]}, ARQ,
                      'hostname')
        self._refused({ARQ: [dict(adds[0], extra=1)] + adds[1:]}, ARQ,
                      'extra')
        self._refused({ARQ: _removes() + [{'path': '/project_id',
                                           'op': 'remove'}]}, ARQ)
        self._refused({ARQ: _adds(project_id='')}, ARQ, 'project_id')
        self._refused({ARQ: adds, uuidutils.generate_uuid(): _removes()},
                      'not both')
        self._refused({ARQ: adds, ARQ.upper(): adds}, 'twice')


class TestDeleteRequest(base.TestCase):

    def test_selectors(self):
        other = uuidutils.generate_uuid()
        self.assertEqual(([ARQ, other], None), schemas.delete_request(
            None, {'arqs': '%s, %s,%s' % (ARQ.upper(), other, ARQ)}))
        self.assertEqual((None, INSTANCE), schemas.delete_request(
            None, {'instance': INSTANCE}))
        self.assertEqual(([ARQ], None), schemas.delete_request(ARQ, {}))

    def test_refused(self):
        for uuid, params in ((None, {}),
                             (None, {'arqs': ARQ, 'instance': INSTANCE}),
                             (None, {'arqs': ARQ + ',x'}),
                             (None, {'arqs': ''}),
                             (None, {'instance': 'vm'}),
                             (None, {'instance': [INSTANCE, INSTANCE]}),
                             (None, {'arqs': ARQ, 'force': '1'}),
                             ('x', {}), (ARQ, {'instance': INSTANCE})):
            self.assertRaises(exception.InvalidParameterValue,
                              schemas.delete_request, uuid, params)
