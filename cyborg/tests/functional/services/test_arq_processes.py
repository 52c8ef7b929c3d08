"""ARQs end to end: cyborg-api, -conductor and -agent as separate processes
over RabbitMQ, a real database and a real Placement served over HTTP.

The agent runs the fake driver on a fleet file of the test's temporary
directory. Everything the test does to ARQs goes through the API over HTTP,
as Nova would (no microversion header; noauth gives every request a service
token); the database is read directly only for what the API does not show
(attach handles and which one an ARQ holds). When a test configures
``[nova]``, it points at a stand-in of Nova's server external events API in
the test process (``NovaStandIn``), which records every request. A test
that kills a process on purpose (the agent, or the conductor mid-bind)
leaves its log out of the final checks.

This module holds the scenario (``ArqProcessesMixin``: the fleet, the API
calls, the database reads and the checks) and its life cycle without Nova:
bind, unbind, delete, concurrent binds and a conductor dying mid-bind. The
events Nova is told of are ``test_nova_events_processes``'s, a conductor
taking over a dead one's binds ``test_bind_recovery_processes``'s; both
build on this module's scenario.
"""

from concurrent import futures
import http.client
import http.server
import json
import re
import threading
import uuid

import fixtures
import sqlalchemy as sa

from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import processes
from cyborg.tests.functional.services import deployment

WAIT_TIMEOUT = deployment.WAIT_TIMEOUT

REGION_A_ID = '3c1f6d0e8b2a4f57a9e4d2c6b8f0a1e3'
REGION_B_ID = '7a9b2c4d6e8f40a1b3c5d7e9f1a2b4c6'
# Card A: one region whose PF has two VFs, so two PCI attach handles.
FPGA_A = {
    'vendor': '0x8086', 'vendor_name': 'intel', 'board': 'pac_arria10',
    'model': 'PAC Arria 10 GX', 'product_id': '0x09c4', 'attach_type': 'PCI',
    'regions': [{'id': REGION_A_ID, 'pfs': 1, 'vfs_per_pf': 2}],
}
# Card B: one region, one TEST_PCI handle (its PF); the Nova test makes its
# preparation hang.
FPGA_B = {
    'vendor': '0x10ee', 'board': 'u250', 'model': 'Alveo U250',
    'product_id': '0x5004', 'regions': [{'id': REGION_B_ID}],
}
# Something else on the host; the Nova test makes its preparation fail.
T4_GPU = {
    'model': 'Tesla T4', 'product_id': '0x1eb8',
    'vgpu_types': [{'type': 'nvidia-222', 'name': 'GRID T4-1B',
                    'instances': 2}],
}
REGION_A = 'fpga-0000:10:00.0-region0'
REGION_B = 'fpga-0000:11:00.0-region0'
VGPU_T4_1B = 'gpu-0000:12:00.0-nvidia-222'
VGPU_T4_1B_TRAIT = 'CUSTOM_NVIDIA_1EB8_T4_1B'
REGION_A_HANDLES = 2
NOVA_EVENTS_PATH = '/os-server-external-events'
EVENT_NAME = 'accelerator-request-bound'
BIND_PATHS = ('/hostname', '/device_rp_uuid', '/instance_uuid')


def region_trait(region_id):
    return 'CUSTOM_FPGA_REGION_' + region_id.upper()


def bind_ops(hostname, rp_uuid, instance_uuid):
    """The RFC 6902 operations binding one ARQ, as Nova sends them."""
    values = (hostname, rp_uuid, instance_uuid)
    return [{'path': path, 'op': 'add', 'value': value}
            for path, value in zip(BIND_PATHS, values, strict=True)]


UNBIND_OPS = [{'path': path, 'op': 'remove'} for path in BIND_PATHS]


class NovaStandIn(fixtures.Fixture):
    """Nova's ``POST /os-server-external-events`` on a port of 127.0.0.1.

    Every request is kept in ``requests`` as ``(method, path, headers,
    body)``, header names in lower case. The events API answers 200 with
    each event given code 200, as Nova does; anything else gets 404.
    """

    def _setUp(self):
        self.requests = []
        self._lock = threading.Lock()
        stand_in = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self, status, body=None):
                data = json.dumps(body).encode() if body is not None else b''
                self.send_response(status)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _record(self):
                length = int(self.headers.get('Content-Length') or 0)
                raw = self.rfile.read(length) if length else b''
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode('utf-8', 'replace')
                with stand_in._lock:
                    stand_in.requests.append(
                        (self.command, self.path,
                         {name.lower(): value
                          for name, value in self.headers.items()}, body))
                return body

            def do_POST(self):
                body = self._record()
                if (self.path.rstrip('/').endswith(NOVA_EVENTS_PATH)
                        and isinstance(body, dict)):
                    events = [dict(event, code=200)
                              for event in body.get('events', [])]
                    self._answer(200, {'events': events})
                else:
                    self._answer(404, {'itemNotFound': {'code': 404}})

            def do_GET(self):
                self._record()
                self._answer(404, {'itemNotFound': {'code': 404}})

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                      Handler)
        self.server.daemon_threads = True
        self.endpoint = 'http://127.0.0.1:%d/v2.1' % self.server.server_port
        thread = threading.Thread(target=self.server.serve_forever,
                                  name='nova-stand-in', daemon=True)
        thread.start()
        self.addCleanup(thread.join, 5)
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)

    def events(self):
        """Every event of every POST to the events API, in arrival order."""
        with self._lock:
            requests = list(self.requests)
        return [event for method, path, _headers, body in requests
                if method == 'POST' and path.endswith(NOVA_EVENTS_PATH)
                and isinstance(body, dict)
                for event in body.get('events', [])]

    def events_of(self, arq_uuids):
        """{tag: [event, ...]} of the events tagged with ``arq_uuids``."""
        found = {arq_uuid: [] for arq_uuid in arq_uuids}
        for event in self.events():
            if event.get('tag') in found:
                found[event['tag']].append(event)
        return found


class ArqProcessesMixin(deployment.DeploymentMixin):
    """The ARQ scenario of issue 4; ``backend`` is the services' database."""

    def _start_services(self, fleet, conductor_options):
        """Start conductor, API and agent; return the fleet's deployables."""
        super()._start_services(fleet, conductor_options)
        return self._wait_until(self._inventory_reported,
                                'the fleet in the API with providers')

    def _inventory_reported(self):
        """Probe: a report was answered and both regions have a provider."""
        if not self._reports_done():
            return None
        status, body = self._api('GET', '/v2/deployables')
        if status != 200:
            return None
        deployables = {deployable['name']: deployable
                       for deployable in body['deployables']}
        if any(deployables.get(name, {}).get('rp_uuid') is None
               for name in (REGION_A, REGION_B, VGPU_T4_1B)):
            return None
        return deployables

    # -- The API -----------------------------------------------------------

    def _api(self, method, path, body=None):
        """Send one request as Nova does; return (status, decoded body)."""
        return deployment.api_request(self.api_port, method, path, body)

    def _expect(self, status, method, path, body=None):
        answer_status, answer = self._api(method, path, body)
        self.assertEqual(status, answer_status,
                         '%s %s %s: %s\n%s' % (method, path, body, answer,
                                               self._logs()))
        return answer

    def _create_profile(self, name, trait, resource_class='FPGA'):
        groups = [{'resources:%s' % resource_class: '1',
                   'trait:%s' % trait: 'required'}]
        return self._expect(201, 'POST', '/v2/device_profiles',
                            [{'name': name, 'groups': groups}])

    def _create_arq(self, profile_name):
        arqs = self._expect(201, 'POST', '/v2/accelerator_requests',
                            {'device_profile_name': profile_name})['arqs']
        self.assertEqual(1, len(arqs), arqs)
        arq = arqs[0]
        self.assertEqual(
            ('Initial', profile_name, 0, None, None, None, '', None, {}),
            (arq['state'], arq['device_profile_name'],
             arq['device_profile_group_id'], arq['hostname'],
             arq['device_rp_uuid'], arq['instance_uuid'],
             arq['attach_handle_type'], arq['attach_handle_uuid'],
             arq['attach_handle_info']))
        return arq

    def _bind(self, arq_uuid, rp_uuid, instance_uuid):
        self._expect(202, 'PATCH', '/v2/accelerator_requests',
                     {arq_uuid: bind_ops(self.host, rp_uuid, instance_uuid)})

    def _get_arq(self, arq_uuid):
        return self._expect(200, 'GET',
                            '/v2/accelerator_requests/%s' % arq_uuid)

    def _resolved(self, instance_uuid):
        """The instance's ARQs once resolved; only 423 may come before 200."""
        path = ('/v2/accelerator_requests?instance=%s&bind_state=resolved'
                % instance_uuid)
        answers = []

        def probe():
            status, body = self._api('GET', path)
            answers.append(status)
            if status not in (200, 423):
                self.fail('GET %s answered %s (after %s): %s\n%s'
                          % (path, status, answers[:-1], body, self._logs()))
            return body['arqs'] if status == 200 else None

        return self._wait_until(probe, 'resolved ARQs of instance %s'
                                % instance_uuid)

    # -- The database --------------------------------------------------------

    def _handles(self, rp_uuid):
        """{uuid: (id, type, info, in_use)} of the attach handles of a provider."""
        with self.database.engine.connect() as connection:
            rows = connection.execute(
                sa.select(models.AttachHandle.uuid, models.AttachHandle.id,
                          models.AttachHandle.attach_type,
                          models.AttachHandle.attach_info,
                          models.AttachHandle.in_use)
                .join(models.Deployable,
                      models.Deployable.id == models.AttachHandle.deployable_id)
                .where(models.Deployable.rp_uuid == rp_uuid)).all()
        return {row.uuid: (row.id, row.attach_type, json.loads(row.attach_info),
                           bool(row.in_use))
                for row in rows}

    def _held_handle_ids(self, arq_uuids):
        """{ARQ uuid: attach_handle_id} as the database holds them."""
        with self.database.engine.connect() as connection:
            rows = connection.execute(
                sa.select(models.ARQ.uuid,
                          models.ARQ.attach_handle_id)
                .where(models.ARQ.uuid.in_(arq_uuids))).all()
        return dict(rows)

    def _arq_count(self):
        with self.database.engine.connect() as connection:
            return connection.execute(
                sa.select(sa.func.count()).select_from(
                    models.ARQ)).scalar_one()

    # -- The checks --------------------------------------------------------

    def _assert_bound(self, arq, rp_uuid, instance_uuid):
        """``arq`` is Bound to one handle of ``rp_uuid``, in use in the DB."""
        self.assertEqual(
            ('Bound', self.host, rp_uuid, instance_uuid),
            (arq['state'], arq['hostname'], arq['device_rp_uuid'],
             arq['instance_uuid']), '%s\n%s' % (arq, self._logs()))
        handles = self._handles(rp_uuid)
        self.assertIn(arq['attach_handle_uuid'], handles, arq)
        handle_id, attach_type, info, in_use = handles[
            arq['attach_handle_uuid']]
        self.assertEqual((attach_type, info),
                         (arq['attach_handle_type'], arq['attach_handle_info']))
        self.assertTrue(in_use, 'handle %s of %s' % (handle_id, arq['uuid']))
        self.assertEqual({arq['uuid']: handle_id},
                         self._held_handle_ids([arq['uuid']]))

    def _assert_unbound_fields(self, arq, state):
        self.assertEqual(
            (state, None, None, None, '', None, {}),
            (arq['state'], arq['hostname'], arq['device_rp_uuid'],
             arq['instance_uuid'], arq['attach_handle_type'],
             arq['attach_handle_uuid'], arq['attach_handle_info']), arq)

    def _assert_handles_free(self, rp_uuid):
        in_use = {handle_uuid: handle[3]
                  for handle_uuid, handle in self._handles(rp_uuid).items()}
        self.assertEqual({False}, set(in_use.values()), in_use)

    def _bind_concurrently(self, profile_name, rp_uuid, count):
        """Bind ``count`` ARQs, each for its own instance, from threads.

        Return {ARQ uuid: resolved ARQ} and {ARQ uuid: instance uuid}.
        """
        arqs = [self._create_arq(profile_name) for _ in range(count)]
        instances = {arq['uuid']: str(uuid.uuid4()) for arq in arqs}
        # Every PATCH waits at the barrier, so they reach the API together.
        barrier = threading.Barrier(count)

        def bind(arq_uuid):
            barrier.wait(WAIT_TIMEOUT)
            return self._api('PATCH', '/v2/accelerator_requests', {
                arq_uuid: bind_ops(self.host, rp_uuid, instances[arq_uuid])})

        with futures.ThreadPoolExecutor(count) as pool:
            answers = list(pool.map(bind, instances))
        self.assertEqual([202] * count, [status for status, _ in answers],
                         '%s\n%s' % (answers, self._logs()))
        resolved = {}
        for arq_uuid, instance_uuid in instances.items():
            arqs_of_instance = self._resolved(instance_uuid)
            self.assertEqual([arq_uuid],
                             [arq['uuid'] for arq in arqs_of_instance])
            resolved[arq_uuid] = arqs_of_instance[0]
        return resolved, instances

    def _assert_each_handle_used_once(self, resolved, rp_uuid, instances):
        states = sorted(arq['state'] for arq in resolved.values())
        self.assertEqual(['BindFailed'] * (len(resolved) - REGION_A_HANDLES)
                         + ['Bound'] * REGION_A_HANDLES, states,
                         '%s\n%s' % (resolved, self._logs()))
        bound = [arq for arq in resolved.values() if arq['state'] == 'Bound']
        for arq in bound:
            self._assert_bound(arq, rp_uuid, instances[arq['uuid']])
        self.assertEqual(set(self._handles(rp_uuid)),
                         {arq['attach_handle_uuid'] for arq in bound})
        failed = [arq for arq in resolved.values()
                  if arq['state'] == 'BindFailed']
        for arq in failed:
            self.assertEqual(('', None, {}),
                             (arq['attach_handle_type'],
                              arq['attach_handle_uuid'],
                              arq['attach_handle_info']), arq)
        held = self._held_handle_ids([arq['uuid'] for arq in failed])
        self.assertEqual({None}, set(held.values()), held)


class ArqLifecycleTestsMixin(ArqProcessesMixin):
    """Without [nova]: bind, unbind, delete, concurrent binds and a conductor
    that dies mid-bind; the events are skipped."""

    def test_bind_unbind_and_delete_without_nova(self):
        deployables = self._start_services(
            {'fpgas': [FPGA_A, FPGA_B], 'gpus': [T4_GPU]},
            {'conductor': {'bind_sweep_interval': 1}})
        rp_uuid = deployables[REGION_A]['rp_uuid']
        self.assertEqual(REGION_A_HANDLES, len(self._handles(rp_uuid)))

        # 1. A profile for region A, and its one ARQ.
        profile = self._create_profile('fpga-a-%s' % self.suffix,
                                       region_trait(REGION_A_ID))
        arq = self._create_arq(profile['name'])

        # 2. Bind: 202 at once, resolved later, Bound to a handle of region
        # A that the database marks in use.
        instance_uuid = str(uuid.uuid4())
        self._bind(arq['uuid'], rp_uuid, instance_uuid)
        resolved = self._resolved(instance_uuid)
        self.assertEqual([arq['uuid']], [item['uuid'] for item in resolved])
        self._assert_bound(resolved[0], rp_uuid, instance_uuid)
        listed = self._expect(200, 'GET', '/v2/accelerator_requests?instance=%s'
                              % instance_uuid)['arqs']
        self.assertEqual(resolved, listed)

        # 3. Nova is not configured: the conductor says it skipped the
        # event of this ARQ, and the PATCH was answered 202 all the same.
        self._wait_until(
            lambda: re.search(r'not sent: [^\n]*%s' % arq['uuid'],
                              self.conductor.log()),
            'the conductor logging the event of %s as not sent'
            % arq['uuid'])

        # 4. Unbind: the ARQ is Unbound and its handle free again.
        self._expect(202, 'PATCH', '/v2/accelerator_requests',
                     {arq['uuid']: UNBIND_OPS})
        self._assert_unbound_fields(self._get_arq(arq['uuid']), 'Unbound')
        self._assert_handles_free(rp_uuid)
        self.assertEqual({arq['uuid']: None},
                         self._held_handle_ids([arq['uuid']]))
        # The handle stays free across the agent's next reports.
        self._wait_for_reports(2, 'after the unbind')
        self._assert_handles_free(rp_uuid)

        # 5. Bind again, then delete by instance: the ARQ is gone and the
        # handle free; a second delete of the instance changes nothing.
        self._bind(arq['uuid'], rp_uuid, instance_uuid)
        self._assert_bound(self._resolved(instance_uuid)[0], rp_uuid,
                           instance_uuid)
        # A bound handle stays in use across the agent's reports.
        self._wait_for_reports(2, 'after the bind')
        self._assert_bound(self._get_arq(arq['uuid']), rp_uuid,
                           instance_uuid)
        self._expect(204, 'DELETE', '/v2/accelerator_requests?instance=%s'
                     % instance_uuid)
        self._expect(404, 'GET', '/v2/accelerator_requests/%s' % arq['uuid'])
        self.assertEqual([], self._expect(
            200, 'GET', '/v2/accelerator_requests?instance=%s'
            % instance_uuid)['arqs'])
        self.assertEqual(0, self._arq_count())
        self._assert_handles_free(rp_uuid)
        self._expect(204, 'DELETE', '/v2/accelerator_requests?instance=%s'
                     % instance_uuid)

        # 6. More binds at once than region A has handles: each handle goes
        # to one ARQ, the others fail; deleting them frees every handle.
        resolved, instances = self._bind_concurrently(profile['name'],
                                                      rp_uuid, 5)
        self._assert_each_handle_used_once(resolved, rp_uuid, instances)
        self._expect(204, 'DELETE', '/v2/accelerator_requests?arqs=%s'
                     % ','.join(resolved))
        self.assertEqual(0, self._arq_count())
        self._assert_handles_free(rp_uuid)

        # 7. The conductor dies mid-bind, after taking a handle, while the
        # agent is frozen; a new conductor takes the bind over once the dead
        # one's lease has run out, and binds it with exactly one handle.
        arq = self._create_arq(profile['name'])
        instance_uuid = str(uuid.uuid4())
        self.agent.pause()
        try:
            self._bind(arq['uuid'], rp_uuid, instance_uuid)
            self._wait_until(
                lambda: self._held_handle_ids([arq['uuid']])[arq['uuid']],
                'a handle taken for %s' % arq['uuid'])
            self.conductor.kill()
            self.services.remove(self.conductor)
            self.assertEqual('BindStarted',
                             self._get_arq(arq['uuid'])['state'])
            self.conductor = self.useFixture(processes.ServiceProcess(
                'cyborg-conductor', self.conductor_config))
            self.services.append(self.conductor)
        finally:
            self.agent.resume()
        self._assert_bound(self._resolved(instance_uuid)[0], rp_uuid,
                           instance_uuid)
        in_use = [handle[3] for handle in self._handles(rp_uuid).values()]
        self.assertEqual([False, True], sorted(in_use))
        self._expect(204, 'DELETE', '/v2/accelerator_requests?instance=%s'
                     % instance_uuid)
        self._assert_handles_free(rp_uuid)

        # 8. Every service stops cleanly on SIGTERM.
        self._assert_clean_stop([self.agent])
        self._assert_clean_stop([self.api, self.conductor])


class TestArqLifecycleMySQL(ArqLifecycleTestsMixin, base.TestCase):
    backend = 'mysql'


class TestArqLifecyclePostgreSQL(ArqLifecycleTestsMixin, base.TestCase):
    backend = 'postgresql'
