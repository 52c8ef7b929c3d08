"""Binds through the processes on a Galera cluster: what the tests share.

``BindBurstMixin`` runs cyborg-api, cyborg-conductor and cyborg-agent as
processes (``cyborg.tests.functional.services.deployment``);
``BindsMixin`` does so on a database of the class's Galera cluster: first
all on node 0, then more API and conductor processes on other nodes
(``add_writer``). ``bind_burst``
creates and binds, from many client threads spread over the API
processes, ``per_device`` ARQs aimed at each of the fake driver's
one-handle FPGA regions, and waits until every bind has ended;
``assert_exact`` checks that each handle of those regions went to one of
its ARQs and the others failed for want of a handle.
"""

from concurrent import futures
import threading
import time
import uuid

import sqlalchemy as sa
from testtools import content

from cyborg.db import models
from cyborg.tests.fixtures import processes
from cyborg.tests.functional.galera import base as galera_base
from cyborg.tests.functional.services import deployment
from cyborg.tests.functional.services import test_arq_processes as cases

ARQ = models.ARQ.__table__
HANDLE = models.AttachHandle.__table__
DEPLOYABLE = models.Deployable.__table__
REGION_ID = '2e4f6a8c0b1d4e3f8a5c7e9b1d3f5a70'
BIND_TIMEOUT = 90
NO_HANDLE = 'has no free attach handle'
# What oslo.db's retry logs (at debug) before it runs a writer's whole
# transaction again after a deadlock.
RETRY_LINE = 'Performing DB retry for function'


def fleet(devices):
    """``devices`` FPGA cards of one region with one attach handle each."""
    return {'fpgas': [{
        'count': devices, 'vendor': '0x8086', 'vendor_name': 'intel',
        'board': 'pac_arria10', 'model': 'PAC Arria 10 GX',
        'product_id': '0x09c4',
        'regions': [{'id': REGION_ID, 'pfs': 1}],
    }]}


class BindBurstMixin(deployment.DeploymentMixin):
    """The burst and its checks, on whatever database and broker the
    deployment has; ``api_ports`` lists the API processes clients take in
    turn."""

    def start_binding_services(self, devices, conductor_options=None):
        """Conductor, API and agent with ``devices`` one-handle regions;
        the regions' providers."""
        options = {'conductor': {'bind_timeout': BIND_TIMEOUT,
                                 'bind_sweep_interval': 1}}
        options.update(conductor_options or {})
        self._start_services(fleet(devices), options)
        self.api_ports = [self.api_port]
        self.conductors = [self.conductor]
        return self._wait_until(lambda: self._region_providers(devices),
                                'the %d regions with providers' % devices,
                                timeout=120)

    def _answers(self, port):
        try:
            return deployment.api_request(port, 'GET', '/v2/deployables')[0] \
                == 200
        except OSError:
            return False

    def _request(self, index, method, path, body):
        port = self.api_ports[index % len(self.api_ports)]
        return deployment.api_request(port, method, path, body, timeout=60)

    def _clients(self, function, items, clients):
        """``function(index, item)`` of each item from ``clients`` threads:
        the answers and the errors clients met (connection refused, reset)."""
        errors = []

        def call(pair):
            try:
                return function(*pair)
            except OSError as error:
                errors.append(repr(error))
                return None, None

        with futures.ThreadPoolExecutor(clients) as pool:
            return list(pool.map(call, enumerate(items))), errors

    def bind_burst(self, regions, per_device, clients=20, during=None):
        """Create and bind ``per_device`` ARQs per region; the ARQ rows
        once none is BindStarted. ``during()`` runs once half the PATCHes
        are sent. Clients take the API processes in turn."""
        profile = 'fpga-%s' % uuid.uuid4().hex[:8]
        status, body = self._request(0, 'POST', '/v2/device_profiles', [{
            'name': profile,
            'groups': [{'resources:FPGA': '1',
                        'trait:' + cases.region_trait(REGION_ID):
                            'required'}]}])
        self.assertEqual(201, status, body)
        count = len(regions) * per_device
        created, errors = self._clients(
            lambda index, _: self._request(
                index, 'POST', '/v2/accelerator_requests',
                {'device_profile_name': profile}), range(count), clients)
        self.assertEqual([], errors)
        self.assertEqual([201] * count, [status for status, _ in created],
                         [answer for answer in created if answer[0] != 201])
        arqs = [body['arqs'][0]['uuid'] for _, body in created]
        targets = {arq: regions[index % len(regions)]
                   for index, arq in enumerate(arqs)}
        sent = []
        lock = threading.Lock()

        def bind(index, arq):
            # One thread only is the one halfway through.
            with lock:
                halfway = len(sent) == count // 2
                sent.append(arq)
            if during is not None and halfway:
                during()
            return self._request(index, 'PATCH', '/v2/accelerator_requests', {
                arq: cases.bind_ops(self.host, targets[arq],
                                    str(uuid.uuid4()))})

        started = time.monotonic()
        self.answers, self.client_errors = self._clients(bind, arqs, clients)
        rows = self._wait_until(lambda: self._resolved(arqs),
                                'all %d binds resolved' % count,
                                timeout=BIND_TIMEOUT + 30)
        self.bind_seconds = time.monotonic() - started
        self.addDetail('bind-seconds', content.text_content(
            '%d binds in %.1f s' % (count, self.bind_seconds)))
        self.assertEqual(count, len(rows))
        return rows

    def _resolved(self, arqs):
        with self.database.engine.connect() as connection:
            rows = connection.execute(
                sa.select(ARQ.c.uuid, ARQ.c.state, ARQ.c.state_reason,
                          ARQ.c.attach_handle_id, ARQ.c.device_rp_uuid
                          ).where(ARQ.c.uuid.in_(arqs))).all()
        if any(row.state == 'BindStarted' for row in rows):
            return None
        return rows

    def assert_exact(self, rows, regions):
        """One ARQ Bound per region, each to its own handle; the others
        BindFailed for want of a handle, holding none; a handle in use
        exactly when an ARQ holds it."""
        bound = [row for row in rows if row.state == 'Bound']
        failed = [row for row in rows if row.state == 'BindFailed']
        self.assertEqual((len(regions), len(rows) - len(regions)),
                         (len(bound), len(failed)),
                         sorted({(row.state, row.state_reason)
                                 for row in rows}))
        self.assertEqual(sorted(regions),
                         sorted(row.device_rp_uuid for row in bound))
        held = [row.attach_handle_id for row in bound]
        self.assertNotIn(None, held)
        self.assertEqual(len(regions), len(set(held)), 'a handle held twice')
        self.assertEqual({None}, {row.attach_handle_id for row in failed})
        self.assertEqual([], [row.state_reason for row in failed
                              if NO_HANDLE not in (row.state_reason or '')])
        with self.database.engine.connect() as connection:
            in_use = {handle_id for handle_id, used in connection.execute(
                sa.select(HANDLE.c.id, HANDLE.c.in_use).join(
                    DEPLOYABLE, HANDLE.c.deployable_id == DEPLOYABLE.c.id
                ).where(DEPLOYABLE.c.rp_uuid.in_(regions))).all() if used}
        self.assertEqual(set(held), in_use)


class BindsMixin(galera_base.GaleraMixin, BindBurstMixin):
    """The burst on a database of the class's Galera cluster."""

    def start_on_node_0(self, devices):
        """Conductor, API and agent on node 0; the regions' providers."""
        return self.start_binding_services(devices)

    def add_writer(self, node):
        """One more conductor and API process, on Galera node ``node``."""
        url = self.on_node(self.database.url, node)
        host = 'conductor%d-%s' % (node, self.suffix)
        config = dict(self.conductor_config,
                      DEFAULT=dict(self.conductor_config['DEFAULT'], host=host),
                      database={'connection': url})
        conductor = self.useFixture(processes.ServiceProcess(
            'cyborg-conductor', config))
        self.services.append(conductor)
        self.conductors.append(conductor)
        port = processes.free_port()
        api = self.useFixture(processes.ServiceProcess('cyborg-api', {
            'DEFAULT': dict(self.conductor_config['DEFAULT'],
                            host='api%d-%s' % (node, self.suffix),
                            auth_strategy='noauth'),
            'api': {'host_ip': '127.0.0.1', 'port': port, 'api_workers': 2},
            'database': {'connection': url}}))
        self.services.append(api)
        self.api_ports.append(port)
        self._wait_until(lambda: self._heartbeat_of(host, 'cyborg-conductor'),
                         'the heartbeat of %s' % host)
        self._wait_until(lambda: self._answers(port), 'the API on node %d'
                         % node)

    def retries(self):
        """Writer transactions the conductors ran again after a deadlock."""
        return sum(conductor.log().count(RETRY_LINE)
                   for conductor in self.conductors)
