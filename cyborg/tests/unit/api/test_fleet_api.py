"""GET /v2/fleet: the page for a browser, the fleet as JSON for its script.

Through the real WSGI application: the JSON nests hosts, devices and
deployable trees with attach handle usage and the ARQs by state, in the
same number of SQL statements for 2 devices as for 40; the rule
cyborg:fleet:get guards the JSON; the page holds no data and, behind
Keystone, is served without a token while the JSON is not.
"""

import webob
from keystonemiddleware import fixture as auth_fixture

from cyborg.common import vocabulary
from cyborg import context as cyborg_context
from cyborg import policies
from cyborg.api import app
from cyborg.api import fleet as fleet_page
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.unit.api import real_app
from cyborg.tests.unit.db import records

BROWSER_ACCEPT = ('text/html,application/xhtml+xml,application/xml;q=0.9,'
                  'image/avif,image/webp,*/*;q=0.8')
TOKEN = 'fleet-token'


def get(application, path='/v2/fleet', **headers):
    return webob.Request.blank(path, headers=headers).get_response(
        application)


def as_role(role, project='project-1'):
    """noauth headers of a caller with only ``role`` in ``project``."""
    return {'X-Roles': role, 'X-Project-Id': project,
            'X-Service-Identity-Status': 'Invalid'}


class Fleet:
    """Two hosts: an FPGA with a region (4 handles, 1 in use by a Bound
    ARQ), a PF and two VFs below it; a GPU in maintenance with a vGPU
    type; and ARQs of two projects."""

    def __init__(self, context, suffix=''):
        self.fpga = records.make_device(context, hostname='host-a' + suffix)
        self.root = records.make_deployable(
            context, self.fpga, name='fpga' + suffix, num_accelerators=0,
            rp_uuid=None)
        self.region = records.make_deployable(
            context, self.fpga, name='fpga-region0' + suffix,
            parent_id=self.root.id, root_id=self.root.id,
            bitstream_id='0b6c1b6e-2c1c-4c2a-9e0e-8d9c8c1f4f11')
        records.make_attribute(context, self.region, key='rc', value='FPGA')
        records.make_attribute(context, self.region, key='function_id',
                               value='d8424dc4')
        self.pf = records.make_deployable(
            context, self.fpga, name='fpga-region0-pf0' + suffix,
            parent_id=self.region.id, root_id=self.root.id,
            num_accelerators=0, rp_uuid=None)
        records.make_attribute(context, self.pf, key='num_vfs', value='2')
        records.make_attribute(context, self.pf, key='pci_address',
                               value='0000:10:00.0')
        self.vfs = [records.make_deployable(
            context, self.fpga, name='fpga-region0-pf0-vf%d%s' % (vf, suffix),
            parent_id=self.pf.id, root_id=self.root.id, num_accelerators=0,
            rp_uuid=None) for vf in range(2)]
        controlpath = records.make_controlpath_id(context, self.fpga)
        self.handles = [records.make_attach_handle(
            context, self.region, controlpath, in_use=index == 0)
            for index in range(4)]

        self.gpu = records.make_device(
            context, hostname='host-b' + suffix, type='GPU',
            status=vocabulary.DeviceStatus.MAINTAINING,
            status_reason='fan replacement')
        self.gpu_root = records.make_deployable(
            context, self.gpu, name='gpu' + suffix, num_accelerators=0,
            rp_uuid=None)
        self.vgpu = records.make_deployable(
            context, self.gpu, name='gpu-nvidia-222' + suffix,
            parent_id=self.gpu_root.id, root_id=self.gpu_root.id)
        records.make_attribute(context, self.vgpu, key='rc', value='VGPU')
        records.make_attribute(context, self.vgpu, key='vgpu_type',
                               value='nvidia-222')
        records.make_attribute(context, self.vgpu, key='vgpu_type_name',
                               value='GRID T4-1B')
        gpu_path = records.make_controlpath_id(context, self.gpu)
        records.make_attach_handle(context, self.vgpu, gpu_path,
                                   attach_type='MDEV')

        profile = records.make_device_profile(context)
        self.bound = records.make_arq(
            context, profile, state=vocabulary.ARQState.BOUND,
            hostname='host-a' + suffix, project_id='project-1',
            instance_uuid='5d0f2a3e-63f5-4d3b-9c83-6b8f1c0c7a11',
            deployable_id=self.region.id,
            attach_handle_id=self.handles[0].id)
        self.other_project = records.make_arq(
            context, profile, project_id='project-2')
        self.profile = profile


class TestFleetJSON(real_app.RealAppTestCase):

    def setUp(self):
        super().setUp()
        self.context = cyborg_context.get_admin_context()

    def _fleet(self, **headers):
        response = get(self.application, **headers)
        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual(fleet_page.JSON, response.content_type)
        return response.json_body

    def test_hosts_devices_and_trees_with_handle_usage(self):
        fleet = Fleet(self.context)
        body = self._fleet()
        self.assertEqual(['host-a', 'host-b'],
                         [host['hostname'] for host in body['hosts']])
        fpga, = body['hosts'][0]['devices']
        self.assertEqual((fleet.fpga.uuid, 'enabled', None),
                         (fpga['uuid'], fpga['status'],
                          fpga['status_reason']))
        root, = fpga['deployables']
        region, = root['children']
        pf, = region['children']
        self.assertEqual(
            [('fpga', 'root'), ('fpga-region0', 'region'),
             ('fpga-region0-pf0', 'pf')],
            [(node['name'], node['kind']) for node in (root, region, pf)])
        self.assertEqual([('fpga-region0-pf0-vf0', 'vf', []),
                          ('fpga-region0-pf0-vf1', 'vf', [])],
                         [(node['name'], node['kind'], node['children'])
                          for node in pf['children']])
        self.assertEqual({'type': 'TEST_PCI', 'in_use': 1, 'total': 4},
                         region['attach_handles'])
        self.assertEqual(
            ('FPGA', 'd8424dc4', fleet.region.bitstream_id, [fleet.bound.uuid]),
            (region['resource_class'], region['function_id'],
             region['bitstream_id'], region['arqs']))
        self.assertEqual('0000:10:00.0', pf['pci_address'])
        self.assertIsNone(pf['attach_handles'])

        gpu, = body['hosts'][1]['devices']
        self.assertEqual(('maintaining', 'fan replacement'),
                         (gpu['status'], gpu['status_reason']))
        vgpu, = gpu['deployables'][0]['children']
        self.assertEqual(
            ('vgpu_type', 'nvidia-222', 'GRID T4-1B',
             {'type': 'MDEV', 'in_use': 0, 'total': 1}),
            (vgpu['kind'], vgpu['vgpu_type'], vgpu['vgpu_type_name'],
             vgpu['attach_handles']))

        self.assertEqual({
            'hosts': 2, 'devices': 2, 'maintaining_devices': 1,
            'deployables': 7, 'attach_handles': {'in_use': 1, 'total': 5},
            'arqs': dict({state: 0 for state in vocabulary.ARQState.ALL},
                         Initial=1, Bound=1),
            'health': {'devices': {'healthy': 2, 'degraded': 0, 'failed': 0},
                       'deployables': {'healthy': 7, 'degraded': 0,
                                       'failed': 0}},
            'drain': {'devices': {'draining': 0, 'drained': 0},
                      'deployables': {'draining': 0, 'drained': 0}}},
            body['summary'])

    def test_arqs_by_state_with_their_instance(self):
        fleet = Fleet(self.context)
        body = self._fleet()
        self.assertEqual(sorted(vocabulary.ARQState.ALL),
                         sorted(body['arqs_by_state']))
        bound, = body['arqs_by_state']['Bound']
        self.assertEqual({
            'uuid': fleet.bound.uuid, 'state': 'Bound', 'state_reason': None,
            'instance_uuid': fleet.bound.instance_uuid,
            'hostname': 'host-a', 'project_id': 'project-1',
            'device_profile_name': fleet.profile.name,
            'deployable_uuid': fleet.region.uuid,
            'deployable_name': 'fpga-region0'}, bound)
        initial, = body['arqs_by_state']['Initial']
        self.assertEqual((fleet.other_project.uuid, None, None),
                         (initial['uuid'], initial['instance_uuid'],
                          initial['deployable_name']))

    def test_a_manager_sees_the_devices_but_only_his_projects_arqs(self):
        fleet = Fleet(self.context)
        body = self._fleet(**as_role('manager', 'project-2'))
        self.assertEqual(2, body['summary']['devices'])
        self.assertEqual([fleet.other_project.uuid],
                         [arq['uuid'] for arqs in
                          body['arqs_by_state'].values() for arq in arqs])
        # Not even through the region's holders.
        region = body['hosts'][0]['devices'][0]['deployables'][0][
            'children'][0]
        self.assertEqual([], region['arqs'])
        self.assertEqual(1, region['attach_handles']['in_use'])

    def test_admin_and_manager_pass_the_rule_reader_and_member_do_not(self):
        Fleet(self.context)
        for role in ('admin', 'manager'):
            self.assertEqual(200, get(self.application,
                                      **as_role(role)).status_int, role)
        for role in ('reader', 'member', 'service'):
            response = get(self.application, **as_role(role))
            self.assertEqual(403, response.status_int, role)
            self.assertIn('cyborg:fleet:get', response.text)

    def test_the_same_statements_for_2_devices_as_for_40(self):
        Fleet(self.context)
        self.statements.clear()
        small = self._fleet()
        small_count = len(self.statements)
        for index in range(19):
            Fleet(self.context, suffix='-%d' % index)
        self.statements.clear()
        large = self._fleet()
        self.assertEqual((2, 40), (small['summary']['devices'],
                                   large['summary']['devices']))
        self.assertEqual(small_count, len(self.statements), self.statements)
        # The page's hosts; their devices, deployables, attributes,
        # handles, ARQs, history; the counts: hosts, devices,
        # deployables, handles, ARQs.
        self.assertEqual(12, small_count, self.statements)

    def test_hosts_come_a_page_at_a_time_with_the_whole_fleets_counts(self):
        for index in range(3):
            Fleet(self.context, suffix='-%d' % index)
        hosts, marker, pages = [], None, 0
        while True:
            path = '/v2/fleet?limit=4' + ('&marker=%s' % marker
                                          if marker else '')
            response = get(self.application, path=path)
            self.assertEqual(200, response.status_int, response.text)
            body = response.json_body
            pages += 1
            self.assertLessEqual(len(body['hosts']), 4)
            self.assertEqual(6, body['summary']['hosts'])
            self.assertEqual(6, body['summary']['devices'])
            self.assertEqual(len(body['hosts']), body['page']['hosts'])
            hosts.extend(host['hostname'] for host in body['hosts'])
            marker = body['page']['next_marker']
            if marker is None:
                break
            self.assertEqual(hosts[-1], marker)
        self.assertEqual(2, pages)
        self.assertEqual(sorted(hosts), hosts)
        self.assertEqual(6, len(set(hosts)))

    def test_a_host_search_shows_the_hosts_whose_name_contains_it(self):
        for index in range(3):
            Fleet(self.context, suffix='-%d' % index)
        response = get(self.application, path='/v2/fleet?host=a-1')
        self.assertEqual(200, response.status_int, response.text)
        body = response.json_body
        self.assertEqual(['host-a-1'],
                         [host['hostname'] for host in body['hosts']])
        self.assertEqual('a-1', body['page']['host'])
        self.assertIsNone(body['page']['next_marker'])
        # The counts stay the whole fleet's.
        self.assertEqual(6, body['summary']['hosts'])
        # A search is text, not a pattern.
        response = get(self.application, path='/v2/fleet?host=host_a%25')
        self.assertEqual([], response.json_body['hosts'])

    def test_a_bad_query_is_400(self):
        for query in ('limit=0', 'limit=501', 'limit=x', 'host=',
                      'sort_key=hostname', 'limit=1&limit=2'):
            response = get(self.application, path='/v2/fleet?' + query)
            self.assertEqual(400, response.status_int, query)
        # The page's own parameter, passed on to the JSON, is ignored.
        self.assertEqual(200, get(self.application,
                                  path='/v2/fleet?refresh=5').status_int)

    def test_an_empty_fleet(self):
        body = self._fleet()
        self.assertEqual([], body['hosts'])
        self.assertEqual(0, body['summary']['attach_handles']['total'])


class TestFleetPage(real_app.RealAppTestCase):

    def test_a_browser_gets_the_page_with_its_css_and_script(self):
        for path in ('/v2/fleet', '/fleet'):
            response = get(self.application, path, Accept=BROWSER_ACCEPT)
            self.assertEqual(200, response.status_int)
            self.assertEqual(fleet_page.HTML, response.content_type)
            page = response.text
            self.assertIn('<title>Cyborg fleet</title>', page)
            self.assertIn('.device-head', page)
            self.assertIn("'X-Auth-Token'", page)
            self.assertNotIn('/*PAGE_', page)
            # Nothing is fetched from another site: no CDN, no fonts.
            self.assertNotIn('http://', page)
            self.assertNotIn('https://', page)
            self.assertNotIn('@import', page)
        self.assertEqual([], self.statements)

    def test_what_accept_chooses(self):
        for accept, media_type in (
                (None, fleet_page.JSON), ('*/*', fleet_page.JSON),
                ('application/json', fleet_page.JSON),
                ('application/json, text/html', fleet_page.JSON),
                ('text/html', fleet_page.HTML),
                (BROWSER_ACCEPT, fleet_page.HTML)):
            headers = {'Accept': accept} if accept else {}
            response = get(self.application, **headers)
            self.assertEqual((200, media_type),
                             (response.status_int, response.content_type),
                             accept)

    def test_an_accept_of_neither_is_406(self):
        response = get(self.application, Accept='image/png')
        self.assertEqual(406, response.status_int)

    def test_the_page_needs_no_rule(self):
        response = get(self.application, Accept=BROWSER_ACCEPT,
                       **as_role('reader'))
        self.assertEqual(200, response.status_int)
        self.assertEqual(fleet_page.HTML, response.content_type)


class TestFleetBehindKeystone(base.TestCase):
    """The page loads without a token (a browser cannot send one while
    navigating); its data needs one, which the page sends as X-Auth-Token."""

    def setUp(self):
        super().setUp()
        self.flags(auth_strategy='keystone')
        self.flags(group='keystone_authtoken',
                   www_authenticate_uri='http://127.0.0.1:9/identity')
        policies.reset()
        self.addCleanup(policies.reset)
        tokens = self.useFixture(auth_fixture.AuthTokenFixture())
        tokens.add_token_data(token_id=TOKEN, user_id='admin-1',
                              project_id='project-1', role_list=['admin'])
        self.useFixture(database.Database(schema='migrations'))
        self.application = app.setup_app()

    def test_the_page_without_a_token(self):
        for path in ('/v2/fleet', '/fleet'):
            response = get(self.application, path, Accept=BROWSER_ACCEPT)
            self.assertEqual(200, response.status_int, path)
            self.assertEqual(fleet_page.HTML, response.content_type)

    def test_the_data_needs_a_token(self):
        for path in ('/v2/fleet', '/fleet'):
            response = get(self.application, path, Accept='application/json')
            self.assertEqual(401, response.status_int, path)
        response = get(self.application, Accept='application/json',
                       **{'X-Auth-Token': TOKEN})
        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual([], response.json_body['hosts'])

    def test_identity_headers_sent_with_the_page_request_are_dropped(self):
        # A caller cannot pass as an admin by asking for HTML: the headers
        # are dropped, and the JSON would need the rule anyway.
        response = get(self.application, Accept='text/html, application/json'
                       ';q=0.1', **{'X-Identity-Status': 'Confirmed',
                                    'X-Roles': 'admin'})
        self.assertEqual(fleet_page.HTML, response.content_type)
