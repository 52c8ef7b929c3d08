"""Device health (issue 32, point 1), end to end: a scripted transient
fault and a fatal one.

cyborg-api, -conductor and -agent run as separate processes over RabbitMQ
and MariaDB, with a real Placement; the conductor recovers a degraded
device after 3 healthy reports in a row (``[health] recovery_reports``).
The agent's fake driver reports two cards of one region each; an ARQ is
bound on card A. The test faults card A by rewriting the fleet file the
running agent reads at every discovery:

* degraded: at the next report card A leaves Placement's offer (its
  region's inventory reserved = total, only card B offered); healthy
  reports then count, the card stays out until the third, and is offered
  again after it;
* failed: card A leaves the offer and stays out whatever it reports,
  until ``POST /v2/devices/{uuid}/clear_health`` (2.6) brings it back.

The ARQ bound on card A stays Bound with the same allocation throughout,
and the card's history records each change. A second test scripts the
fault in the fleet file by report number (``faults``): degraded at the
third report, healthy from the fifth, offered again after the seventh.
"""

import uuid

import sqlalchemy as sa

from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.functional.services import deployment
from cyborg.tests.functional.services import test_arq_processes as cases

ARQ = models.ARQ.__table__
Device = models.Device.__table__
HANDLES = 4
RECOVERY_REPORTS = 3
FLEET_VERSION = {'OpenStack-API-Version': 'accelerator 2.6'}


def fleet(health_a='healthy', reason_a=None):
    """Cards A (bus 0x10) and B (bus 0x11), card A reporting
    ``health_a``."""
    card_a = {'regions': [{'pfs': 1, 'vfs_per_pf': HANDLES}],
              'health': health_a}
    if reason_a:
        card_a['health_reason'] = reason_a
    return {'fpgas': [card_a,
                      {'regions': [{'pfs': 1, 'vfs_per_pf': HANDLES}]}]}


class HealthProcessesTest(deployment.DeploymentMixin, base.TestCase):

    backend = 'mysql'

    def _api26(self, method, path, body=None, status=200):
        answer_status, answer = deployment.api_request(
            self.api_port, method, path, body, headers=FLEET_VERSION,
            timeout=60)
        self.assertEqual(status, answer_status, answer)
        return answer

    def _placement(self, url):
        response = self.placement.adapter.get(url)
        self.assertEqual(200, response.status_code, response.text)
        return response.json()

    def _candidates(self):
        """The providers Placement offers one FPGA from."""
        answer = self._placement(
            '/allocation_candidates?resources1=FPGA:1&group_policy=none')
        return sorted(rp for request in answer['allocation_requests']
                      for rp in request['allocations'])

    def _reserved(self, rp_uuid):
        inventory = self._placement('/resource_providers/%s/inventories'
                                    % rp_uuid)['inventories']['FPGA']
        return inventory['reserved'], inventory['total']

    def _allocations(self, consumer):
        return {rp: allocation['resources'] for rp, allocation in
                self._placement('/allocations/%s' % consumer)[
                    'allocations'].items()}

    def _device(self, rp_uuid):
        """(uuid, health, health_reason, healthy_reports) of the device
        whose region has ``rp_uuid``."""
        deployables = models.Deployable.__table__
        with self.database.engine.connect() as connection:
            return connection.execute(sa.select(
                Device.c.uuid, Device.c.health, Device.c.health_reason,
                Device.c.healthy_reports).join(
                deployables, deployables.c.device_id == Device.c.id).where(
                deployables.c.rp_uuid == rp_uuid)).one()

    def _arq_state(self, arq_uuid):
        with self.database.engine.connect() as connection:
            return connection.execute(sa.select(
                ARQ.c.state, ARQ.c.device_rp_uuid).where(
                ARQ.c.uuid == arq_uuid)).one()

    def _bind_on(self, rp_uuid):
        """An ARQ allocated (as Nova would) and bound on ``rp_uuid``;
        (arq uuid, instance uuid) once Bound."""
        profile = 'fpga-%s' % self.suffix
        status, body = self._api('POST', '/v2/device_profiles', [{
            'name': profile, 'groups': [{'resources:FPGA': '1'}]}])
        self.assertEqual(201, status, body)
        status, body = self._api('POST', '/v2/accelerator_requests',
                                 {'device_profile_name': profile})
        self.assertEqual(201, status, body)
        arq_uuid = body['arqs'][0]['uuid']
        instance = str(uuid.uuid4())
        response = self.placement.adapter.put(
            '/allocations/%s' % instance,
            json={'allocations': {rp_uuid: {'resources': {'FPGA': 1}}},
                  'project_id': str(uuid.uuid4()),
                  'user_id': str(uuid.uuid4()),
                  'consumer_generation': None, 'consumer_type': 'INSTANCE'})
        self.assertEqual(204, response.status_code, response.text)
        status, body = self._api('PATCH', '/v2/accelerator_requests', {
            arq_uuid: cases.bind_ops(self.host, rp_uuid, instance)})
        self.assertEqual(202, status, body)
        self._wait_until(
            lambda: self._arq_state(arq_uuid).state == 'Bound',
            'the ARQ bound on card A')
        return arq_uuid, instance

    def _assert_untouched(self, arq_uuid, instance, rp_uuid, allocation):
        self.assertEqual(('Bound', rp_uuid), tuple(self._arq_state(arq_uuid)))
        self.assertEqual(allocation, self._allocations(instance))

    def test_transient_fault_recovers_fatal_one_waits_for_a_clear(self):
        self._start_services(fleet(), conductor_options={
            'health': {'recovery_reports': RECOVERY_REPORTS}})
        providers = self._wait_until(lambda: self._region_providers(2),
                                     'both regions in Placement',
                                     timeout=60)
        self._wait_until(lambda: self._candidates() == providers,
                         'both regions offered')
        region_a = self._region_of_bus('10')
        region_b = self._region_of_bus('11')
        device_a = self._device(region_a).uuid
        arq_uuid, instance = self._bind_on(region_a)
        allocation = self._allocations(instance)
        self.assertEqual({region_a: {'FPGA': 1}}, allocation)

        # Degraded: out of the offer at the next report.
        deployment.write_fleet(self.fleet_path,
                               fleet('degraded', 'AER non-fatal errors'))
        self._wait_until(
            lambda: self._reserved(region_a) == (HANDLES, HANDLES),
            'card A out of the offer')
        self.assertEqual('degraded', self._device(region_a).health)
        self.assertEqual([region_b], self._candidates())
        self._assert_untouched(arq_uuid, instance, region_a, allocation)

        # Healthy again: counted, still out until the third report.
        deployment.write_fleet(self.fleet_path, fleet())
        counting = self._wait_until(
            lambda: self._device(region_a).healthy_reports >= 1
            and self._device(region_a), 'a healthy report counted')
        self.assertEqual('degraded', counting.health)
        self.assertEqual((HANDLES, HANDLES), self._reserved(region_a))
        self._wait_until(
            lambda: self._device(region_a).health == 'healthy',
            'card A healthy after %d reports' % RECOVERY_REPORTS)
        self._wait_until(lambda: self._reserved(region_a) == (0, HANDLES),
                         'card A offered again')
        self.assertEqual(sorted([region_a, region_b]), self._candidates())
        self._assert_untouched(arq_uuid, instance, region_a, allocation)

        # Failed: out, and healthy reports do not bring it back.
        deployment.write_fleet(self.fleet_path,
                               fleet('failed', 'AER fatal errors'))
        self._wait_until(
            lambda: self._device(region_a).health == 'failed',
            'card A failed')
        self._wait_until(
            lambda: self._reserved(region_a) == (HANDLES, HANDLES),
            'card A out of the offer')
        deployment.write_fleet(self.fleet_path, fleet())
        self._wait_for_reports(RECOVERY_REPORTS + 2, 'healthy reports')
        self.assertEqual(('failed', 'AER fatal errors'),
                         tuple(self._device(region_a))[1:3])
        self.assertEqual((HANDLES, HANDLES), self._reserved(region_a))
        self.assertEqual([region_b], self._candidates())
        self._assert_untouched(arq_uuid, instance, region_a, allocation)

        # An operator clears it: offered again at once.
        shown = self._api26('POST', '/v2/devices/%s/clear_health'
                            % device_a)
        self.assertEqual((device_a, 'healthy'),
                         (shown['uuid'], shown['health']))
        self.assertEqual((0, HANDLES), self._reserved(region_a))
        self.assertEqual(sorted([region_a, region_b]), self._candidates())
        self._assert_untouched(arq_uuid, instance, region_a, allocation)

        history = self._api26('GET', '/v2/devices/%s/history'
                              % device_a)['history']
        self.assertEqual(
            [('clear_health', None), ('health', self.host),
             ('health', self.host), ('health', self.host)],
            [(entry['event'], entry['agent']) for entry in history
             if entry['event'] in ('health', 'clear_health')])
        self.assertEqual(
            ['healthy: cleared by an operator', 'failed: AER fatal errors',
             'healthy: 3 healthy report(s) in a row',
             'degraded: AER non-fatal errors'],
            [entry['reason'] for entry in history
             if entry['event'] in ('health', 'clear_health')])
        self._assert_clean_stop([self.agent])
        self._assert_clean_stop([self.api, self.conductor])

    def test_a_scripted_fault_by_report_number(self):
        # Card A reports degraded at its driver's 3rd and 4th discoveries
        # (one per report) and healthy from the 5th: back after the 7th.
        scripted = fleet()
        scripted['fpgas'][0]['faults'] = [
            {'at_report': 3, 'health': 'degraded', 'reason': 'scripted',
             'recover_at': 5}]
        self._start_services(scripted, conductor_options={
            'health': {'recovery_reports': RECOVERY_REPORTS}})
        self._wait_until(lambda: self._region_providers(2),
                         'both regions in Placement', timeout=60)
        region_a = self._region_of_bus('10')
        device_a = self._device(region_a).uuid

        def health_entries():
            history = self._api26('GET', '/v2/devices/%s/history'
                                  % device_a)['history']
            entries = [entry['reason'] for entry in history
                       if entry['event'] == 'health']
            return len(entries) == 2 and entries

        self.assertEqual(
            ['healthy: 3 healthy report(s) in a row', 'degraded: scripted'],
            self._wait_until(health_entries, 'card A degraded and back',
                             timeout=60))
        self.assertEqual('healthy', self._device(region_a).health)
        self._wait_until(lambda: self._reserved(region_a) == (0, HANDLES),
                         'card A offered again')
        self.assertGreaterEqual(self._reports_done(), 7)
        self._assert_clean_stop([self.agent])
        self._assert_clean_stop([self.api, self.conductor])

    def _region_of_bus(self, bus):
        status, body = self._api('GET', '/v2/deployables')
        self.assertEqual(200, status, body)
        [rp_uuid] = [item['rp_uuid'] for item in body['deployables']
                     if item['name'].endswith('-region0')
                     and ':%s:' % bus in item['name']]
        return rp_uuid
