"""GET /v2/accelerator_requests?device_uuid= and ?deployable_uuid=
(microversion 2.6) through the real WSGI application, on every backend.

The ARQs holding an attach handle of a device, or of a deployable or one
below it in its tree, whatever their state: which instances lose their
accelerator if the card goes. A bad uuid is a 400 naming the parameter,
below 2.6 the parameters are unknown (400), a project's reader sees only
its project's ARQs, and a page costs one statement for 1 holder as for 50.
"""

import json

import webob
from oslo_utils import uuidutils

from cyborg import context as cyborg_context
from cyborg.tests.unit.api import real_app
from cyborg.tests.unit.db import records

PROJECT = 'project-a'
OTHER_PROJECT = 'project-b'
PATH = '/v2/accelerator_requests'


def as_role(role, project=PROJECT):
    """noauth headers of a caller with only ``role`` in ``project``."""
    return {'X-Roles': role, 'X-Project-Id': project,
            'X-Service-Identity-Status': 'Invalid'}


class HolderFilterTests(real_app.RealAppTestCase):

    def setUp(self):
        super().setUp()
        self.context = cyborg_context.get_admin_context()
        self.profile = records.make_device_profile(self.context)
        # A card: a root deployable, two regions below it, a function
        # below the first region; handles on the regions and the function.
        self.card = records.make_device(self.context)
        self.root = records.make_deployable(self.context, self.card,
                                            rp_uuid=None)
        self.region1 = self._below(self.root, self.root)
        self.region2 = self._below(self.root, self.root)
        self.function = self._below(self.region1, self.root)
        self.cpid = records.make_controlpath_id(self.context, self.card)
        # Another card of the same host, its ARQ not listed.
        self.other = records.DeviceTree(self.context, handles=1)
        self.other_arq = self._hold(self.other.attach_handles[0])
        self.idle = records.make_arq(self.context, self.profile)

    def _below(self, parent, root):
        return records.make_deployable(self.context, self.card,
                                       parent_id=parent.id, root_id=root.id)

    def _hold(self, handle, state='Bound', project=PROJECT):
        """An ARQ of ``project`` in ``state`` holding ``handle``."""
        return records.make_arq(
            self.context, self.profile, state=state, project_id=project,
            attach_handle_id=handle.id, hostname='compute-1',
            instance_uuid=uuidutils.generate_uuid()).uuid

    def _holders(self, deployable, count, **kwargs):
        handles = [records.make_attach_handle(self.context, deployable,
                                              self.cpid)
                   for _ in range(count)]
        return [self._hold(handle, **kwargs) for handle in handles]

    def request(self, query, version='2.6', **headers):
        headers['OpenStack-API-Version'] = 'accelerator ' + version
        return webob.Request.blank(PATH + '?' + query,
                                   headers=headers).get_response(
            self.application)

    def listed(self, query, **headers):
        response = self.request(query, **headers)
        self.assertEqual(200, response.status_int, response.text)
        return sorted(arq['uuid'] for arq in response.json_body['arqs'])

    def test_a_device_lists_the_arqs_holding_its_handles_in_any_state(self):
        bound = self._holders(self.region1, 2)
        binding = self._holders(self.region2, 1, state='BindStarted')
        below = self._holders(self.function, 1, state='Deleting')
        self.assertEqual(sorted(bound + binding + below),
                         self.listed('device_uuid=' + self.card.uuid))
        self.assertEqual([self.other_arq], self.listed(
            'device_uuid=' + self.other.device.uuid))

    def test_a_deployable_lists_the_arqs_of_its_subtree(self):
        region1 = self._holders(self.region1, 2)
        region2 = self._holders(self.region2, 1)
        function = self._holders(self.function, 1)
        self.assertEqual(sorted(region1 + region2 + function),
                         self.listed('deployable_uuid=' + self.root.uuid))
        self.assertEqual(sorted(region1 + function),
                         self.listed('deployable_uuid=' + self.region1.uuid))
        self.assertEqual(region2,
                         self.listed('deployable_uuid=' + self.region2.uuid))
        self.assertEqual(function,
                         self.listed('deployable_uuid=' + self.function.uuid))

    def test_both_filters_and_the_other_filters_combine(self):
        region1 = self._holders(self.region1, 1)
        self._holders(self.region2, 1, state='BindStarted')
        self.assertEqual(region1, self.listed(
            'device_uuid=%s&deployable_uuid=%s'
            % (self.card.uuid, self.region1.uuid)))
        self.assertEqual([], self.listed(
            'device_uuid=%s&deployable_uuid=%s'
            % (self.other.device.uuid, self.region1.uuid)))
        self.assertEqual(region1, self.listed(
            'device_uuid=%s&bind_state=resolved' % self.card.uuid))

    def test_a_uuid_without_dashes_or_in_capitals_is_the_same(self):
        held = self._holders(self.region2, 1)
        for uuid in (self.card.uuid.upper(), self.card.uuid.replace('-', '')):
            self.assertEqual(held, self.listed('device_uuid=' + uuid))

    def test_an_unknown_device_or_deployable_lists_none(self):
        self._holders(self.region1, 1)
        for name in ('device_uuid', 'deployable_uuid'):
            self.assertEqual([], self.listed(
                '%s=%s' % (name, uuidutils.generate_uuid())))

    def test_a_bad_uuid_is_a_400_naming_the_parameter(self):
        for name in ('device_uuid', 'deployable_uuid'):
            for value in ('x', '1', self.card.uuid + '0', ''):
                response = self.request('%s=%s' % (name, value))
                self.assertEqual(400, response.status_int, (name, value))
                fault = json.loads(response.json_body['error_message'])
                self.assertIn(name, fault['faultstring'])
            response = self.request('%s=%s&%s=%s' % (
                name, self.card.uuid, name, self.card.uuid))
            self.assertEqual(400, response.status_int, name)

    def test_below_2_6_the_parameters_are_unknown(self):
        self._holders(self.region1, 1)
        for name in ('device_uuid', 'deployable_uuid'):
            response = self.request('%s=%s' % (name, self.card.uuid),
                                    version='2.5')
            self.assertEqual(400, response.status_int, response.text)
            fault = json.loads(response.json_body['error_message'])
            self.assertIn('Unknown query parameter ' + name,
                          fault['faultstring'])

    def test_a_project_reader_sees_only_its_own_arqs(self):
        own = self._holders(self.region1, 2)
        others = self._holders(self.region2, 1, project=OTHER_PROJECT)
        query = 'device_uuid=' + self.card.uuid
        self.assertEqual(sorted(own), self.listed(query, **as_role('reader')))
        self.assertEqual([], self.listed(
            query, **as_role('reader', 'project-c')))
        self.assertEqual(sorted(own + others), self.listed(
            query, **as_role('admin', 'project-c')))

    def test_a_page_is_one_statement_for_1_holder_as_for_50(self):
        counts = []
        for count in (1, 49):
            self._holders(self.region1, count)
            for query in ('device_uuid=' + self.card.uuid,
                          'deployable_uuid=' + self.root.uuid):
                self.statements = []
                listed = self.listed(query)
                counts.append(len(self.statements))
            self.assertEqual(len(listed), 1 if count == 1 else 50)
        self.assertEqual([1, 1, 1, 1], counts)

    def _pages(self, query):
        """The uuids of every page of ``query`` (``limit=2``), in order."""
        seen = []
        path = PATH + '?limit=2&sort_key=created_at&' + query
        while path:
            response = webob.Request.blank(path, headers={
                'OpenStack-API-Version': 'accelerator 2.6'}).get_response(
                self.application)
            self.assertEqual(200, response.status_int, response.text)
            seen.extend(arq['uuid'] for arq in response.json_body['arqs'])
            path = response.json_body.get('next')
            if path:
                self.assertIn(query, path)
                path = path.replace('http://localhost', '')
        return seen

    def test_the_pages_of_a_device_or_deployable_follow_each_other(self):
        held = self._holders(self.region1, 3) + self._holders(self.function, 2)
        self._holders(self.region2, 1)
        for query, expected in (
                ('device_uuid=' + self.card.uuid, 6),
                ('deployable_uuid=' + self.region1.uuid, 5)):
            seen = self._pages(query)
            self.assertEqual(expected, len(seen), query)
            self.assertEqual(len(seen), len(set(seen)), query)
        self.assertEqual(sorted(held), sorted(
            self._pages('deployable_uuid=' + self.region1.uuid)))


class HolderFilterMySQLTests(HolderFilterTests):

    backend = 'mysql'


class HolderFilterPostgreSQLTests(HolderFilterTests):

    backend = 'postgresql'
