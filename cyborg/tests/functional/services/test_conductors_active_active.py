"""Two conductors, active-active, and one of them killed mid-batch (issue 13).

Two cyborg-conductor processes (hosts ``conductor-*`` and ``conductor2-*``)
serve one RabbitMQ virtual host and one MariaDB database with an API and an
agent, as separate processes. A batch of 200 binds, one instance each, is
PATCHed through the API by client threads while the agent is frozen
(SIGSTOP), so the binds are still under way when every PATCH has been
answered 202. The database then shows ARQs leased by each conductor (the
binds are shared, not done twice); the first conductor is killed (SIGKILL)
and the agent thawed. The survivor must finish every bind: each ARQ ends
Bound or BindFailed, no attach handle is held twice, a handle is in use
exactly when an ARQ holds it, no lease is left and the Nova stand-in hears
of each instance once.
"""

from concurrent import futures
import re
import time
import uuid

import sqlalchemy as sa
from testtools import content

from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.functional.services import deployment
from cyborg.tests.functional.services import test_arq_processes as cases
from cyborg.tests.functional.services import \
    test_bind_recovery_processes as recovery

ARQ = models.ARQ.__table__
HANDLE = models.AttachHandle.__table__
BINDS = 200
CLIENTS = 20
CARDS = 4
# 4 regions of 60 handles: every bind can have one.
HANDLES_PER_REGION = 60
REGION_ID = '5b0e2f4c6d8a4b1c9e3f5a7b9c1d3e5f'
FLEET = {'fpgas': [{
    'count': CARDS, 'vendor': '0x8086', 'vendor_name': 'intel',
    'board': 'pac_arria10', 'model': 'PAC Arria 10 GX',
    'product_id': '0x09c4',
    'regions': [{'id': REGION_ID, 'pfs': 1,
                 'vfs_per_pf': HANDLES_PER_REGION}],
}]}
# The bind settings of the recovery test (leases of 3 s); the bind timeout
# leaves room for the 200 PATCHes of a loaded 2-CPU machine.
BIND_TIMEOUT = 45
# After the last event, this many seconds (several sweeps) show that no
# second event follows.
QUIET_SECONDS = 3


class ActiveActiveTest(deployment.DeploymentMixin, base.TestCase):

    backend = 'mysql'

    def _rows(self, arq_uuids):
        with self.database.engine.connect() as connection:
            return connection.execute(
                sa.select(ARQ.c.uuid, ARQ.c.state, ARQ.c.state_reason,
                          ARQ.c.attach_handle_id, ARQ.c.bind_owner,
                          ARQ.c.bind_event_pending, ARQ.c.instance_uuid)
                .where(ARQ.c.uuid.in_(arq_uuids))).all()

    def _handles_in_use(self):
        with self.database.engine.connect() as connection:
            return set(connection.execute(
                sa.select(HANDLE.c.id).where(HANDLE.c.in_use)).scalars())

    def _in_parallel(self, function, items):
        with futures.ThreadPoolExecutor(CLIENTS) as pool:
            return list(pool.map(function, items))

    def test_two_conductors_share_binds_and_survive_a_kill(self):
        nova = self.useFixture(cases.NovaStandIn())
        self._start_services(FLEET, {
            'nova': {'auth_type': 'admin_token', 'endpoint': nova.endpoint,
                     'token': 'nova-token'},
            'conductor': {'bind_timeout': BIND_TIMEOUT,
                          'bind_workers': recovery.SETTINGS.workers,
                          'bind_sweep_interval':
                              recovery.SETTINGS.sweep_interval}})
        second_host = 'conductor2-%s' % self.suffix
        second = self._start_conductor(second_host)
        regions = self._wait_until(lambda: self._region_providers(CARDS),
                                   'the %d regions with providers' % CARDS)
        profile = 'fpga-%s' % self.suffix
        status, body = self._api('POST', '/v2/device_profiles', [{
            'name': profile,
            'groups': [{'resources:FPGA': '1',
                        'trait:' + cases.region_trait(REGION_ID):
                            'required'}]}])
        self.assertEqual(201, status, body)

        def create(_):
            return self._api('POST', '/v2/accelerator_requests',
                             {'device_profile_name': profile})

        created = self._in_parallel(create, range(BINDS))
        self.assertEqual([201] * BINDS, [status for status, _ in created],
                         created)
        arqs = [body['arqs'][0]['uuid'] for _, body in created]
        instances = {arq_uuid: str(uuid.uuid4()) for arq_uuid in arqs}
        targets = {arq_uuid: regions[index % CARDS]
                   for index, arq_uuid in enumerate(arqs)}

        def bind(arq_uuid):
            return self._api('PATCH', '/v2/accelerator_requests', {
                arq_uuid: cases.bind_ops(self.host, targets[arq_uuid],
                                         instances[arq_uuid])})

        # The agent is frozen: the binds wait for it, leased and holding
        # their handles, when the PATCHes have all been answered.
        self.agent.pause()
        try:
            started = time.monotonic()
            answers = self._in_parallel(bind, arqs)
            patched = time.monotonic() - started
            self.assertEqual([202] * BINDS,
                             [status for status, _ in answers], answers)
            owners = {'conductor-%s/' % self.suffix: set(),
                      second_host + '/': set()}

            def both_leasing():
                for row in self._rows(arqs):
                    for prefix in owners:
                        if (row.bind_owner or '').startswith(prefix):
                            owners[prefix].add(row.uuid)
                return all(owners.values())

            self._wait_until(both_leasing, 'binds leased by both conductors')
            self.conductor.kill()
            self.services.remove(self.conductor)
        finally:
            self.agent.resume()
        self.addDetail('patch-seconds', content.text_content('%.1f' % patched))

        def resolved():
            rows = self._rows(arqs)
            if any(row.state == 'BindStarted' for row in rows):
                return None
            return rows

        rows = self._wait_until(resolved, 'all %d binds resolved' % BINDS,
                                timeout=BIND_TIMEOUT + 30)
        self.assertEqual(BINDS, len(rows))
        states = {row.uuid: row.state for row in rows}
        # Handles are plentiful: every bind succeeds, those the dead
        # conductor held included.
        self.assertEqual({'Bound'}, set(states.values()),
                         [(row.uuid, row.state, row.state_reason)
                          for row in rows if row.state != 'Bound'])
        held = [row.attach_handle_id for row in rows]
        self.assertNotIn(None, held)
        self.assertEqual(len(held), len(set(held)), 'a handle held twice')
        self.assertEqual(set(held), self._handles_in_use())
        self.assertEqual(instances,
                         {row.uuid: row.instance_uuid for row in rows})
        # The survivor took over binds the dead conductor had leased.
        taken = {arq_uuid for line in re.findall(
            r'Taking over the binds of ARQs ([0-9a-f, -]+) of instance',
            second.log()) for arq_uuid in line.split(', ')}
        dead = owners['conductor-%s/' % self.suffix]
        self.assertTrue(dead & taken, (dead, taken))

        self._wait_until(lambda: all(nova.events_of(arqs).values()),
                         'the events of every instance at Nova')
        time.sleep(QUIET_SECONDS)
        self.assertEqual(
            {arq_uuid: [{'name': cases.EVENT_NAME,
                         'server_uuid': instances[arq_uuid],
                         'tag': arq_uuid, 'status': 'completed'}]
             for arq_uuid in arqs},
            nova.events_of(arqs))
        # Nova has every event: no lease (of a bind or of its event) and
        # no event owed is left.
        self.assertEqual({(None, None)},
                         {(row.bind_owner, row.bind_event_pending)
                          for row in self._rows(arqs)})
        self._assert_clean_stop([self.api, second])
