"""Scarce attach handles: many binds aimed at few handles (issue 13, point 6).

cyborg-api, -conductor and -agent run as separate processes over RabbitMQ
and MariaDB. The agent's fake driver reports 100 FPGA cards of one region
and one physical function each: 100 resource providers of one attach handle
each. 1,000 ARQs, 10 aimed at each provider and each for its own instance,
are created and bound through the API by 50 client threads, one PATCH per
instance as Nova sends them. Every handle goes to exactly one ARQ: 100 end
Bound, the 900 others BindFailed saying that no handle was free, and the
database shows no handle held twice and a handle in use exactly when an
ARQ holds it. No client sees a connection error or a 5xx.
"""

from concurrent import futures
import time
import uuid

import sqlalchemy as sa
from testtools import content

from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.functional.services import deployment
from cyborg.tests.functional.services import test_arq_processes as cases

ARQ = models.ARQ.__table__
HANDLE = models.AttachHandle.__table__
DEVICES = 100
ARQS_PER_DEVICE = 10
CLIENTS = 50
REGION_ID = '2e4f6a8c0b1d4e3f8a5c7e9b1d3f5a70'
FLEET = {'fpgas': [{
    'count': DEVICES, 'vendor': '0x8086', 'vendor_name': 'intel',
    'board': 'pac_arria10', 'model': 'PAC Arria 10 GX',
    'product_id': '0x09c4',
    # One PF and no VF: one attach handle per region.
    'regions': [{'id': REGION_ID, 'pfs': 1}],
}]}
BIND_TIMEOUT = 90
NO_HANDLE = 'has no free attach handle'


class ScarceHandlesTest(deployment.DeploymentMixin, base.TestCase):

    backend = 'mysql'

    def _clients(self, function, items):
        """``function`` of each item from CLIENTS threads: the answers,
        and the errors the clients met (a connection refused or reset)."""
        errors = []

        def call(item):
            try:
                return function(item)
            except OSError as error:
                errors.append(repr(error))
                return None, None

        with futures.ThreadPoolExecutor(CLIENTS) as pool:
            return list(pool.map(call, items)), errors

    def _measure(self, name, started):
        self.addDetail(name, content.text_content(
            '%.1f s' % (time.monotonic() - started)))

    def test_each_handle_goes_to_one_arq(self):
        self._start_services(FLEET, {'conductor': {
            'bind_timeout': BIND_TIMEOUT, 'bind_sweep_interval': 1}})
        started = time.monotonic()
        regions = self._wait_until(lambda: self._region_providers(DEVICES),
                                   'the %d regions with providers' % DEVICES,
                                   timeout=60)
        self._measure('report-seconds', started)
        profile = 'fpga-%s' % self.suffix
        status, body = self._api('POST', '/v2/device_profiles', [{
            'name': profile,
            'groups': [{'resources:FPGA': '1',
                        'trait:' + cases.region_trait(REGION_ID):
                            'required'}]}])
        self.assertEqual(201, status, body)
        count = DEVICES * ARQS_PER_DEVICE

        started = time.monotonic()
        created, errors = self._clients(
            lambda _: self._api('POST', '/v2/accelerator_requests',
                                {'device_profile_name': profile}),
            range(count))
        self._measure('create-seconds', started)
        self.assertEqual([], errors)
        self.assertEqual([201] * count, [status for status, _ in created],
                         [answer for answer in created if answer[0] != 201])
        arqs = [body['arqs'][0]['uuid'] for _, body in created]
        # ARQ i aims at region i % 100: 10 ARQs for each one-handle region.
        targets = {arq_uuid: regions[index % DEVICES]
                   for index, arq_uuid in enumerate(arqs)}
        instances = {arq_uuid: str(uuid.uuid4()) for arq_uuid in arqs}

        started = time.monotonic()
        answers, errors = self._clients(
            lambda arq_uuid: self._api('PATCH', '/v2/accelerator_requests', {
                arq_uuid: cases.bind_ops(self.host, targets[arq_uuid],
                                         instances[arq_uuid])}),
            arqs)
        self._measure('patch-seconds', started)
        self.assertEqual([], errors)
        self.assertEqual([202] * count, [status for status, _ in answers],
                         [answer for answer in answers if answer[0] != 202])

        def resolved():
            with self.database.engine.connect() as connection:
                rows = connection.execute(
                    sa.select(ARQ.c.uuid, ARQ.c.state, ARQ.c.state_reason,
                              ARQ.c.attach_handle_id,
                              ARQ.c.device_rp_uuid)).all()
            if any(row.state == 'BindStarted' for row in rows):
                return None
            return rows

        rows = self._wait_until(resolved, 'all %d binds resolved' % count,
                                timeout=BIND_TIMEOUT + 30)
        self._measure('resolve-seconds', started)
        self.assertEqual(count, len(rows))
        bound = [row for row in rows if row.state == 'Bound']
        failed = [row for row in rows if row.state == 'BindFailed']
        self.assertEqual((DEVICES, count - DEVICES),
                         (len(bound), len(failed)),
                         sorted({(row.state, row.state_reason)
                                 for row in rows}))
        # One ARQ bound per device, each to a handle of its own.
        self.assertEqual(sorted(regions),
                         sorted(row.device_rp_uuid for row in bound))
        held = [row.attach_handle_id for row in bound]
        self.assertNotIn(None, held)
        self.assertEqual(DEVICES, len(set(held)), 'a handle held twice')
        self.assertEqual({None}, {row.attach_handle_id for row in failed})
        self.assertEqual([], [row.state_reason for row in failed
                              if NO_HANDLE not in (row.state_reason or '')])
        with self.database.engine.connect() as connection:
            handles = dict(connection.execute(
                sa.select(HANDLE.c.id, HANDLE.c.in_use)).all())
        self.assertEqual(DEVICES, len(handles))
        self.assertEqual(set(held),
                         {handle_id for handle_id, in_use in handles.items()
                          if in_use})
        self._assert_clean_stop([self.agent])
        self._assert_clean_stop([self.api, self.conductor])
