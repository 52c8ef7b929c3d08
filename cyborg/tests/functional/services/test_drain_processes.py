"""Draining one FPGA region in place (issue 32, point 2), end to end.

cyborg-api, -conductor and -agent run as separate processes over RabbitMQ
and MariaDB, with a real Placement. The agent's fake driver reports one
card of two regions of twelve handles each. An ARQ is bound on region 1,
chosen as Nova chooses: Placement's allocation candidates, the first one
allocated to the instance. Region 1 is then drained: it shows
``draining``, Placement stops offering it (reserved = total) and ten more
binds, each through the allocation candidates, all land on region 0,
while the ARQ of region 1 stays Bound and no allocation of an existing
ARQ changes. A bind that names region 1 directly fails (``drained``).
Once region 1's ARQ is deleted it shows ``drained``; undraining it makes
Placement offer it again.
"""

import uuid

import sqlalchemy as sa

from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.functional.services import deployment
from cyborg.tests.functional.services import test_arq_processes as cases

ARQ = models.ARQ.__table__
REGION_IDS = ('3a5c7e9b1d3f4e2a8c6b0d2f4a6c8e01',
              '3a5c7e9b1d3f4e2a8c6b0d2f4a6c8e02')
HANDLES = 12
FLEET = {'fpgas': [{
    'vendor': '0x8086', 'vendor_name': 'intel', 'board': 'pac_arria10',
    'model': 'PAC Arria 10 GX', 'product_id': '0x09c4',
    'regions': [{'id': region_id, 'pfs': 1, 'vfs_per_pf': HANDLES}
                for region_id in REGION_IDS],
}]}
BINDS = 10
FLEET_VERSION = {'OpenStack-API-Version': 'accelerator 2.6'}


class DrainProcessesTest(deployment.DeploymentMixin, base.TestCase):

    backend = 'mysql'

    def _api26(self, method, path, body=None, status=200):
        answer_status, answer = deployment.api_request(
            self.api_port, method, path, body, headers=FLEET_VERSION,
            timeout=60)
        self.assertEqual(status, answer_status, answer)
        return answer

    def _regions(self):
        """{name suffix ('region0', 'region1'): deployable} once both have
        a provider in Placement; else None."""
        try:
            status, body = self._api('GET', '/v2/deployables')
        except ConnectionError:
            return None
        if status != 200:
            return None
        regions = {item['name'].rsplit('-', 1)[1]: item
                   for item in body['deployables']
                   if '-region' in item['name'] and item['rp_uuid']}
        if len(regions) != 2 or set(self._candidates()) != {
                region['rp_uuid'] for region in regions.values()}:
            return None
        return regions

    def _placement(self, url):
        response = self.placement.adapter.get(url)
        self.assertEqual(200, response.status_code, response.text)
        return response.json()

    def _candidates(self):
        """The providers Placement offers one FPGA from, in its order."""
        answer = self._placement(
            '/allocation_candidates?resources1=FPGA:1&group_policy=none')
        return [rp for request in answer['allocation_requests']
                for rp in request['allocations']]

    def _reserved(self, rp_uuid):
        inventory = self._placement('/resource_providers/%s/inventories'
                                    % rp_uuid)['inventories']['FPGA']
        return inventory['reserved'], inventory['total']

    def _allocations(self, consumer):
        return {rp: allocation['resources'] for rp, allocation in
                self._placement('/allocations/%s' % consumer)[
                    'allocations'].items()}

    def _schedule(self, instance):
        """As Nova's scheduler: the first allocation candidate, allocated
        to ``instance``; its provider."""
        candidates = self._candidates()
        self.assertTrue(candidates, 'Placement offers no FPGA')
        rp_uuid = candidates[0]
        response = self.placement.adapter.put(
            '/allocations/%s' % instance,
            json={'allocations': {rp_uuid: {'resources': {'FPGA': 1}}},
                  'project_id': str(uuid.uuid4()),
                  'user_id': str(uuid.uuid4()),
                  'consumer_generation': None,
                  'consumer_type': 'INSTANCE'})
        self.assertEqual(204, response.status_code, response.text)
        return rp_uuid

    def _create_arq(self, profile):
        status, body = self._api('POST', '/v2/accelerator_requests',
                                 {'device_profile_name': profile})
        self.assertEqual(201, status, body)
        return body['arqs'][0]['uuid']

    def _bind(self, arq_uuid, rp_uuid, instance):
        status, body = self._api('PATCH', '/v2/accelerator_requests', {
            arq_uuid: cases.bind_ops(self.host, rp_uuid, instance)})
        self.assertEqual(202, status, body)

    def _states(self, arq_uuids):
        """{uuid: (state, reason, rp_uuid)} once none is BindStarted."""
        with self.database.engine.connect() as connection:
            rows = connection.execute(sa.select(
                ARQ.c.uuid, ARQ.c.state, ARQ.c.state_reason,
                ARQ.c.device_rp_uuid).where(
                ARQ.c.uuid.in_(list(arq_uuids)))).all()
        if any(row.state == 'BindStarted' for row in rows):
            return None
        return {row.uuid: (row.state, row.state_reason, row.device_rp_uuid)
                for row in rows}

    def _drain_of(self, deployable_uuid):
        return self._api26('GET', '/v2/deployables/%s'
                           % deployable_uuid)['drain']

    def test_a_drained_region_takes_no_new_bind_and_keeps_its_arq(self):
        self._start_services(FLEET)
        regions = self._wait_until(self._regions,
                                   'both regions offered by Placement',
                                   timeout=60)
        region0, region1 = regions['region0'], regions['region1']
        profile = 'fpga-%s' % self.suffix
        status, body = self._api('POST', '/v2/device_profiles', [{
            'name': profile, 'groups': [{'resources:FPGA': '1'}]}])
        self.assertEqual(201, status, body)

        # The ARQ of region 1: Placement chose it, as it would for Nova
        # (region 0 taken out of the offer for this one choice).
        self._api26('POST', '/v2/deployables/%s/drain' % region0['uuid'])
        held = self._create_arq(profile)
        held_instance = str(uuid.uuid4())
        self.assertEqual(region1['rp_uuid'], self._schedule(held_instance))
        self._api26('POST', '/v2/deployables/%s/undrain' % region0['uuid'])
        self._bind(held, region1['rp_uuid'], held_instance)
        self.assertEqual('Bound', self._wait_until(
            lambda: self._states([held]), 'the first bind')[held][0])
        held_allocation = self._allocations(held_instance)

        shown = self._api26('POST', '/v2/deployables/%s/drain'
                            % region1['uuid'], {'reason': 'replace'})

        self.assertEqual('draining', shown['drain'])
        self.assertIsNotNone(shown['drain_since'])
        self.assertEqual((HANDLES, HANDLES),
                         self._reserved(region1['rp_uuid']))
        self.assertEqual((0, HANDLES), self._reserved(region0['rp_uuid']))
        self.assertEqual([region0['rp_uuid']], self._candidates())

        arqs = {self._create_arq(profile): str(uuid.uuid4())
                for _ in range(BINDS)}
        for arq_uuid, instance in arqs.items():
            self._bind(arq_uuid, self._schedule(instance), instance)
        # A caller naming the drained provider directly is refused.
        direct = self._create_arq(profile)
        self._bind(direct, region1['rp_uuid'], str(uuid.uuid4()))
        states = self._wait_until(
            lambda: self._states(list(arqs) + [held, direct]),
            'the binds after the drain')

        self.assertEqual({arq_uuid: ('Bound', None, region0['rp_uuid'])
                          for arq_uuid in arqs},
                         {arq_uuid: states[arq_uuid] for arq_uuid in arqs})
        self.assertEqual('Bound', states[held][0])
        self.assertEqual('BindFailed', states[direct][0])
        self.assertIn('is drained', states[direct][1])
        self.assertEqual(held_allocation, self._allocations(held_instance))
        self.assertEqual('draining', self._drain_of(region1['uuid']))

        status, body = self._api('DELETE', '/v2/accelerator_requests?arqs=%s'
                                 % held)
        self.assertEqual(204, status, body)
        self.assertEqual('drained', self._wait_until(
            lambda: self._drain_of(region1['uuid']) == 'drained' and
            'drained', 'region 1 drained'))
        self.assertEqual((HANDLES, HANDLES),
                         self._reserved(region1['rp_uuid']))

        shown = self._api26('POST', '/v2/deployables/%s/undrain'
                            % region1['uuid'])

        self.assertIsNone(shown['drain'])
        self.assertEqual((0, HANDLES), self._reserved(region1['rp_uuid']))
        self.assertIn(region1['rp_uuid'], self._candidates())
        history = self._api26('GET', '/v2/deployables/%s/history'
                              % region1['uuid'])['history']
        self.assertEqual(
            [('undrain', None), ('delete', None), ('drain', 'replace')],
            [(entry['event'], entry['reason']) for entry in history
             if entry['event'] in ('drain', 'undrain', 'delete')])
        self.assertEqual([('failed', direct)], [
            (entry['outcome'], entry['arq_uuid']) for entry in history
            if entry['event'] == 'bind' and entry['outcome'] == 'failed'])
        self._assert_clean_stop([self.agent])
        self._assert_clean_stop([self.api, self.conductor])
