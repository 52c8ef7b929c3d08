"""The Nova client against a stand-in for Keystone and Nova's compute API.

Nova cannot run here, so a small HTTP server answers the identity calls
keystoneauth makes (version document, token with a catalog) and records
what reaches ``/os-server-external-events``. The client under test is the
real one, configured through the [nova] options as an operator would.
"""

import datetime
import http.server
import json
import threading
import time

import fixtures
from keystoneauth1 import loading as ks_loading
from oslo_utils import uuidutils

from cyborg import conf
from cyborg.clients import nova
from cyborg.tests import base

TOKEN = 'token-of-cyborg'


class StandIn(http.server.ThreadingHTTPServer):
    """Keystone v3 (password auth) and Nova's events URL on one port."""

    daemon_threads = True

    def __init__(self):
        super().__init__(('127.0.0.1', 0), _Handler)
        self.base = 'http://127.0.0.1:%d' % self.server_address[1]
        self.requests = []
        self.token_requests = 0
        self.events_status = 200
        # None: every server is on a host (each event is taken). Else the
        # servers Nova knows, each to its host (None before one takes it),
        # answered by Nova's rules (see nova_answer).
        self.servers = None
        self.lock = threading.Lock()
        # Set: event posts get no answer until it is cleared (a hung Nova).
        self.hang = threading.Event()
        self.released = threading.Event()

    def record(self, method, path, headers, body):
        with self.lock:
            self.requests.append((method, path, headers, body))

    def event_posts(self):
        with self.lock:
            return [(headers, body) for method, path, headers, body
                    in self.requests
                    if method == 'POST' and path.endswith(nova.EVENTS_URL)]


class _Handler(http.server.BaseHTTPRequestHandler):

    def log_message(self, *args):
        pass

    def _answer(self, status, body, headers=None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _body(self):
        length = int(self.headers.get('Content-Length') or 0)
        return json.loads(self.rfile.read(length)) if length else None

    def do_GET(self):
        server = self.server
        server.record('GET', self.path, dict(self.headers), None)
        if self.path.rstrip('/') == '/identity/v3':
            self._answer(200, {'version': {
                'id': 'v3.14', 'status': 'stable',
                'links': [{'rel': 'self',
                           'href': server.base + '/identity/v3/'}],
                'media-types': []}})
        else:
            self._answer(404, {'error': 'not here'})

    def do_POST(self):
        server = self.server
        body = self._body()
        server.record('POST', self.path, dict(self.headers), body)
        if self.path == '/identity/v3/auth/tokens':
            with server.lock:
                server.token_requests += 1
            self._answer(201, _token(server.base),
                         {'X-Subject-Token': TOKEN})
        elif self.path == '/compute/v2.1' + nova.EVENTS_URL:
            if server.hang.is_set():
                server.released.wait(30)
                return
            if server.servers is not None:
                self._answer(*nova_answer(server.servers, body['events']))
                return
            status = server.events_status
            answered = [dict(event, code=422 if status == 207 else 200)
                        for event in body['events']]
            if status < 300:
                self._answer(status, {'events': answered})
            else:
                # A 404 here is not Nova's (no itemNotFound): a proxy's.
                self._answer(status, {'computeFault': {'message': 'broken'}}
                             if status >= 500 else {'error': 'not here'})
        else:
            self._answer(404, {'error': 'not here'})


def nova_answer(servers, events):
    """(status, body) Nova's os-server-external-events gives ``events``.

    Each event gets a code and status: 200 completed when its server is on
    a host, 404 failed when Nova has no such server, 422 failed when the
    server has no host yet. The answer is 200 when every event was taken,
    207 when some were, and a plain 404 (itemNotFound) when none was.
    """
    answered = []
    for event in events:
        if event['server_uuid'] not in servers:
            code = 404
        elif servers[event['server_uuid']] is None:
            code = 422
        else:
            code = 200
        answered.append(dict(event, code=code,
                             status='completed' if code == 200 else 'failed'))
    codes = {event['code'] for event in answered}
    if 200 not in codes:
        return 404, {'itemNotFound': {
            'code': 404, 'message': 'No instances found for any event'}}
    return (200 if codes == {200} else 207), {'events': answered}


def _token(base_url):
    expires = (datetime.datetime.now(datetime.timezone.utc)
               + datetime.timedelta(hours=1))
    endpoint = {'interface': 'public', 'region': 'RegionOne',
                'region_id': 'RegionOne', 'id': uuidutils.generate_uuid(),
                'url': base_url + '/compute/v2.1'}
    return {'token': {
        'methods': ['password'],
        'expires_at': expires.strftime('%Y-%m-%dT%H:%M:%S.000000Z'),
        'issued_at': datetime.datetime.now(datetime.timezone.utc).strftime(
            '%Y-%m-%dT%H:%M:%S.000000Z'),
        'user': {'id': 'cyborg', 'name': 'cyborg',
                 'domain': {'id': 'default', 'name': 'Default'}},
        'project': {'id': 'service', 'name': 'service',
                    'domain': {'id': 'default', 'name': 'Default'}},
        'roles': [{'id': 'admin', 'name': 'admin'},
                  {'id': 'service', 'name': 'service'}],
        'catalog': [{'type': 'compute', 'name': 'nova', 'id': 'nova',
                     'endpoints': [endpoint]}]}}


class NovaClientTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.server = StandIn()
        thread = threading.Thread(target=self.server.serve_forever,
                                  daemon=True)
        thread.start()
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)
        self.logger = self.useFixture(fixtures.FakeLogger(
            name='cyborg.clients.nova', level='INFO'))

    def configure(self):
        # keystoneauth registers a plugin's options when it loads it, and
        # never unregisters them: the required auth_url would then fail the
        # parsing of the configuration in later tests of this process.
        password_opts = ks_loading.get_auth_plugin_conf_options('password')
        conf.CONF.register_opts(password_opts, group='nova')

        def unregister():
            conf.CONF.reset()
            conf.CONF.unregister_opts(password_opts, group='nova')

        self.addCleanup(unregister)
        self.flags(group='nova', auth_type='password',
                   auth_url=self.server.base + '/identity/v3',
                   username='cyborg', password='secret',
                   project_name='service', user_domain_name='Default',
                   project_domain_name='Default', region_name='RegionOne')
        return nova.NovaClient(conf.CONF)

    def events(self, count):
        server_uuid = uuidutils.generate_uuid()
        return [nova.arq_event(server_uuid, uuidutils.generate_uuid(),
                               bound=index % 2 == 0)
                for index in range(count)]

    def test_events_of_a_batch_go_in_one_request(self):
        client = self.configure()
        events = self.events(3)

        self.assertTrue(client.send_events(events))

        [(headers, body)] = self.server.event_posts()
        self.assertEqual({'events': events}, body)
        self.assertEqual(['completed', 'failed', 'completed'],
                         [event['status'] for event in body['events']])
        self.assertEqual({'accelerator-request-bound'},
                         {event['name'] for event in body['events']})
        self.assertEqual('compute 2.82', headers['OpenStack-API-Version'])
        self.assertEqual(TOKEN, headers['X-Auth-Token'])

    def test_one_login_for_many_events(self):
        client = self.configure()

        for _ in range(5):
            self.assertTrue(client.send_events(self.events(2)))

        self.assertEqual(5, len(self.server.event_posts()))
        self.assertEqual(1, self.server.token_requests)
        # Discovery and login once, then only the events.
        self.assertEqual(
            [('GET', '/identity/v3'), ('POST', '/identity/v3/auth/tokens')]
            + [('POST', '/compute/v2.1/os-server-external-events')] * 5,
            [(method, path) for method, path, _, _ in self.server.requests])

    def test_process_client_is_made_once(self):
        self.configure()
        nova.reset_client()
        self.addCleanup(nova.reset_client)

        first = nova.get_client(conf.CONF)
        first.send_events(self.events(1))
        nova.get_client(conf.CONF).send_events(self.events(1))

        self.assertIs(first, nova.get_client(conf.CONF))
        self.assertEqual(1, self.server.token_requests)

    def test_unconfigured_nova_is_logged_once_and_skipped(self):
        client = nova.NovaClient(conf.CONF)
        events = self.events(1)

        self.assertFalse(client.is_configured())
        self.assertFalse(client.send_events(events))
        self.assertFalse(client.send_events(self.events(1)))

        self.assertEqual([], self.server.requests)
        self.assertEqual(1, self.logger.output.count('auth_type is not set'))
        self.assertIn(events[0]['tag'], self.logger.output)

    def test_nova_error_is_logged_with_the_ids(self):
        client = self.configure()
        self.server.events_status = 500
        events = self.events(2)

        self.assertFalse(client.send_events(events))

        for event in events:
            self.assertIn(event['tag'], self.logger.output)
        self.assertIn(events[0]['server_uuid'], self.logger.output)
        self.assertIn('HTTP 500', self.logger.output)

    def test_events_nova_took_none_of_count_as_delivered(self):
        # Nova answers 404 to the whole request when it takes none of the
        # events, whether the servers are unknown or not on a host yet.
        client = self.configure()
        unhosted = self.events(1)
        self.server.servers = {unhosted[0]['server_uuid']: None}
        events = unhosted + self.events(1)

        self.assertTrue(client.send_events(events))

        self.assertIn('Nova took none of the events of ARQ %s'
                      % events[0]['tag'], self.logger.output)
        self.assertIn('no such server, or none on a compute host yet '
                      '(Nova: No instances found for any event)',
                      self.logger.output)
        self.assertNotIn('no longer has', self.logger.output)

    def test_an_event_nova_cannot_route_yet_is_logged_as_such(self):
        # A bind ended before nova-compute set the server's host: Nova
        # knows the server and answers 422 for its event.
        client = self.configure()
        taken, unhosted = self.events(1), self.events(1)
        self.server.servers = {taken[0]['server_uuid']: 'compute-1',
                               unhosted[0]['server_uuid']: None}

        self.assertTrue(client.send_events(taken + unhosted))

        self.assertIn('Nova could not route the event for ARQ %s: server %s '
                      'is on no compute host yet' % (
                          unhosted[0]['tag'], unhosted[0]['server_uuid']),
                      self.logger.output)
        self.assertIn('Told Nova of ARQ %s of server %s: completed' % (
            taken[0]['tag'], taken[0]['server_uuid']), self.logger.output)
        self.assertNotIn('has no server', self.logger.output)
        self.assertNotIn('no longer has', self.logger.output)

    def test_an_event_of_a_server_nova_does_not_have_is_logged_as_such(self):
        client = self.configure()
        taken, gone = self.events(1), self.events(1)
        self.server.servers = {taken[0]['server_uuid']: 'compute-1'}

        self.assertTrue(client.send_events(taken + gone))

        self.assertIn('Nova has no server %s: the event for ARQ %s is '
                      'dropped' % (gone[0]['server_uuid'], gone[0]['tag']),
                      self.logger.output)
        self.assertNotIn('could not route', self.logger.output)

    def test_a_404_that_is_not_novas_answer_is_an_error(self):
        # Something in front of Nova answers 404 without Nova's body: the
        # events are not delivered (the binder sends them again).
        client = self.configure()
        self.server.events_status = 404
        events = self.events(1)

        self.assertFalse(client.send_events(events))

        self.assertIn('Nova refused the events of ARQ %s' % events[0]['tag'],
                      self.logger.output)
        self.assertIn('HTTP 404', self.logger.output)
        self.assertNotIn('took none', self.logger.output)

    def test_unreachable_nova_is_logged(self):
        client = self.configure()
        self.server.shutdown()
        self.server.server_close()

        self.assertFalse(client.send_events(self.events(1)))
        self.assertIn('could not be told', self.logger.output)

    def test_a_nova_that_never_answers_is_given_up_after_the_configured_timeout(self):
        client = self.configure()
        self.flags(group='nova', timeout=1)
        self.server.hang.set()
        self.addCleanup(self.server.released.set)
        events = self.events(1)

        started = time.monotonic()
        self.assertFalse(client.send_events(events))

        self.assertLess(time.monotonic() - started, 15)
        self.assertEqual(1, len(self.server.event_posts()))
        self.assertIn('could not be told', self.logger.output)
        self.assertIn(events[0]['tag'], self.logger.output)

    def test_without_a_configured_timeout_requests_still_have_one(self):
        client = self.configure()
        self.assertIsNone(conf.CONF.nova.timeout)
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.clients.nova.DEFAULT_TIMEOUT', 1))
        self.server.hang.set()
        self.addCleanup(self.server.released.set)

        started = time.monotonic()
        self.assertFalse(client.send_events(self.events(1)))

        self.assertLess(time.monotonic() - started, 15)
        self.assertIn('could not be told', self.logger.output)

    def test_admin_token_and_endpoint_need_no_keystone(self):
        options = ks_loading.get_auth_plugin_conf_options('admin_token')
        conf.CONF.register_opts(options, group='nova')
        self.flags(group='nova', auth_type='admin_token',
                   endpoint=self.server.base + '/compute/v2.1',
                   token='nova-token')
        events = self.events(2)

        self.assertTrue(nova.NovaClient(conf.CONF).send_events(events))

        [(headers, body)] = self.server.event_posts()
        self.assertEqual({'events': events}, body)
        self.assertEqual(('compute 2.82', 'nova-token'),
                         (headers['OpenStack-API-Version'],
                          headers['X-Auth-Token']))
        self.assertEqual(0, self.server.token_requests)

    def test_no_events_send_nothing(self):
        client = self.configure()

        self.assertTrue(client.send_events([]))
        self.assertEqual([], self.server.requests)
