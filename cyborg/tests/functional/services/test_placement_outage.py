"""Placement down while the fleet changes and an ARQ is bound (issue 13):
cyborg-api, -conductor and -agent as processes over RabbitMQ, MariaDB and a
real Placement served over HTTP that the test stops and starts again on the
same port, its database kept.

While Placement is down the database follows the agent (a report commits
before the conductor tries Placement), the conductor logs one warning per
report, the API answers reads and a bind ends Bound: no step of a bind
calls Placement (Nova makes the allocations). Once Placement is back, the
host's next report makes Placement equal the database again, by comparing
the two: the providers of a card removed during the outage, whose rows are
gone, are deleted all the same, and so is a provider a failed sync created
without marking it OWNER_CYBORG.
"""

import re
import uuid

from cyborg.conductor import placement_sync
from cyborg.tests import base
from cyborg.tests.functional.services import deployment
from cyborg.tests.functional.services import test_arq_processes as arq_tests

INTEL_REGION0_ID = 'a1b2c3d4e5f60718293a4b5c6d7e8f90'
INTEL_REGION1_ID = '0f9e8d7c6b5a49382716a5b4c3d2e1f0'
FUNCTION_ID = '5e6f7a8b9c0d41e2a3b4c5d6e7f8a9b0'
XILINX_REGION_ID = '2b4d6f8a0c1e43a5b7c9d1e3f5a7b9c1'
NEW_XILINX_REGION_ID = '9c7a5e3b1d0f42c4a6e8b0d2f4a6c8e0'


def intel_fpga(region0, region1):
    return {'vendor': '0x8086', 'vendor_name': 'intel',
            'board': 'pac_arria10', 'model': 'PAC Arria 10 GX',
            'product_id': '0x09c4', 'regions': [region0, region1]}


def xilinx_fpga(region_id):
    return {'vendor': '0x10ee', 'board': 'u250', 'model': 'Alveo U250',
            'product_id': '0x5004', 'regions': [{'id': region_id}]}


T4_GPU = {'model': 'Tesla T4', 'product_id': '0x1eb8',
          'vgpu_types': [{'type': 'nvidia-222', 'name': 'GRID T4-1B',
                          'instances': 2}]}
# Fleet A: cards on buses 0x10 (Intel), 0x11 (Xilinx), 0x12 (the GPU).
FLEET_A = {'fpgas': [
    intel_fpga({'id': INTEL_REGION0_ID, 'function_id': FUNCTION_ID,
                'pfs': 1, 'vfs_per_pf': 2},
               {'id': INTEL_REGION1_ID, 'pfs': 1, 'vfs_per_pf': 2}),
    xilinx_fpga(XILINX_REGION_ID)], 'gpus': [T4_GPU]}
# During the outage, first: the GPU is removed, region 0 gets a third VF
# and loses its function, region 1 gets the function.
CHANGED_INTEL = intel_fpga(
    {'id': INTEL_REGION0_ID, 'pfs': 1, 'vfs_per_pf': 3},
    {'id': INTEL_REGION1_ID, 'function_id': FUNCTION_ID, 'pfs': 1,
     'vfs_per_pf': 2})
FLEET_WITHOUT_GPU = {'fpgas': [CHANGED_INTEL, xilinx_fpga(XILINX_REGION_ID)]}
# Then a new card on bus 0x12, once the GPU's rows are gone: a new device.
FLEET_B = {'fpgas': [CHANGED_INTEL, xilinx_fpga(XILINX_REGION_ID),
                     xilinx_fpga(NEW_XILINX_REGION_ID)]}

COMMON_TRAITS = {'OWNER_CYBORG', 'CUSTOM_FAKE_DEVICE'}
FUNCTION_TRAIT = 'CUSTOM_FPGA_FUNCTION_ID_' + FUNCTION_ID.upper()
INTEL_REGION0 = 'fpga-0000:10:00.0-region0'
INTEL_REGION1 = 'fpga-0000:10:00.0-region1'
XILINX_REGION = 'fpga-0000:11:00.0-region0'
GPU_VGPU = 'gpu-0000:12:00.0-nvidia-222'
NEW_XILINX_REGION = 'fpga-0000:12:00.0-region0'


def region_traits(vendor, region_id, *others):
    return {'CUSTOM_FPGA_' + vendor,
            'CUSTOM_FPGA_REGION_' + region_id.upper(), *others}


# Providers of fleet B written out by hand: name -> (rc, total, traits
# besides the common ones).
PROVIDERS_B = {
    INTEL_REGION0: ('FPGA', 3, region_traits('INTEL', INTEL_REGION0_ID)),
    INTEL_REGION1: ('FPGA', 2, region_traits('INTEL', INTEL_REGION1_ID,
                                             FUNCTION_TRAIT)),
    XILINX_REGION: ('FPGA', 1, region_traits('XILINX', XILINX_REGION_ID)),
    NEW_XILINX_REGION: ('FPGA', 1,
                        region_traits('XILINX', NEW_XILINX_REGION_ID)),
}
NOT_SYNCED = 'Resource providers of host %s not synced'


class PlacementOutageMixin(deployment.DeploymentMixin):
    """The scenario of fault test 4; ``backend`` is the services' database."""

    # -- The API, Placement and the logs ------------------------------------

    def _api(self, method, path, body=None):
        return deployment.api_request(self.api_port, method, path, body)

    def _expect(self, status, method, path, body=None):
        answer_status, answer = self._api(method, path, body)
        self.assertEqual(status, answer_status,
                         '%s %s: %s\n%s' % (method, path, answer,
                                            self._logs()))
        return answer

    def _deployables(self):
        """The host's deployables through the API, by name."""
        body = self._expect(200, 'GET', '/v2/deployables?hostname=%s'
                            % self.host)
        return {deployable['name']: deployable
                for deployable in body['deployables']}

    def _with_providers(self, names):
        """Probe: the deployables once ``names`` are exactly those with rp_uuid."""
        if not self._reports_done():
            return None
        deployables = self._deployables()
        offering = {name for name, deployable in deployables.items()
                    if deployable['rp_uuid'] is not None}
        return deployables if offering == set(names) else None

    def _placement_get(self, url):
        response = self.placement.adapter.get(url)
        if response.status_code == 404:
            return None
        self.assertEqual(200, response.status_code,
                         '%s: %s' % (url, response.text))
        return response.json()

    def _placement_view(self):
        """(compute node uuid, {provider uuid: (name, parent, rc, total,
        max_unit, reserved, traits)}) of the host's tree as Placement has it."""
        nodes = self._placement_get('/resource_providers?name=%s'
                                    % self.host)['resource_providers']
        if not nodes:
            return None, {}
        node_uuid = nodes[0]['uuid']
        view = {}
        for provider in self._placement_get(
                '/resource_providers?in_tree=%s'
                % node_uuid)['resource_providers']:
            rp_uuid = provider['uuid']
            if rp_uuid == node_uuid:
                continue
            inventories = self._placement_get(
                '/resource_providers/%s/inventories' % rp_uuid)
            traits = self._placement_get(
                '/resource_providers/%s/traits' % rp_uuid)
            if inventories is None or traits is None:
                # Deleted by a sync since the listing: no view this time.
                view[rp_uuid] = None
                continue
            records = tuple(sorted(
                (resource_class, record['total'], record['max_unit'],
                 record['reserved'])
                for resource_class, record in
                inventories['inventories'].items()))
            traits = frozenset(traits['traits'])
            view[rp_uuid] = (provider['name'],
                             provider['parent_provider_uuid'], records,
                             traits)
        return node_uuid, view

    def _expected_view(self, deployables, node_uuid, providers,
                       reserved=()):
        """What ``_placement_view`` should show for ``providers``, those
        named in ``reserved`` wholly reserved."""
        return {
            deployables[name]['rp_uuid']: (
                '%s_%s' % (self.host, name), node_uuid,
                ((resource_class, total, total,
                  total if name in reserved else 0),),
                frozenset(traits | COMMON_TRAITS))
            for name, (resource_class, total, traits) in providers.items()}

    def _not_synced_warnings(self):
        pattern = NOT_SYNCED % re.escape(self.host)
        return [line for line in self.conductor.log().splitlines()
                if re.search(pattern, line)]

    def _placement_complaints(self):
        """Conductor log lines at WARNING or above that mention Placement or
        the host's providers (whatever logged them)."""
        return [line for line in self.conductor.log().splitlines()
                if re.search(r'\b(WARNING|ERROR|CRITICAL)\b', line)
                and re.search(r'[Pp]lacement|[Rr]esource provider', line)]

    # -- The scenario ------------------------------------------------------

    def test_placement_outage_converges_at_next_report(self):
        # 1. Fleet A is reported and published.
        # The half-written provider below is made behind the conductor's
        # back while the host is in step; a resync every second (not the
        # default 10 minutes) finds it. One a failed sync leaves is found
        # by the next report: a failed sync is never marked in step
        # (test_report_digest).
        self._start_services(FLEET_A, {'conductor': {
            'bind_sweep_interval': 1, 'report_resync_interval': 1}})
        providers_a = {
            INTEL_REGION0: ('FPGA', 2, region_traits(
                'INTEL', INTEL_REGION0_ID, FUNCTION_TRAIT)),
            INTEL_REGION1: ('FPGA', 2, region_traits('INTEL',
                                                     INTEL_REGION1_ID)),
            XILINX_REGION: ('FPGA', 1, region_traits('XILINX',
                                                     XILINX_REGION_ID)),
            GPU_VGPU: ('VGPU', 2, {'CUSTOM_NVIDIA_1EB8_T4_1B'}),
        }
        deployables_a = self._wait_until(
            lambda: self._with_providers(providers_a), 'fleet A in the API')
        node_uuid = self._wait_until(
            lambda: self._placement_view()[0], 'the compute node provider')
        expected_a = self._expected_view(deployables_a, node_uuid,
                                         providers_a)
        self._wait_until(lambda: self._placement_view()[1] == expected_a,
                         'fleet A in Placement')
        # A provider a sync created but could not mark OWNER_CYBORG before
        # Placement failed, for a card removed since: the next report
        # deletes it.
        half_written = placement_sync.provider_uuid(
            self.host, 'fpga-0000:13:00.0-region0')
        response = self.placement.adapter.post('/resource_providers', json={
            'uuid': half_written, 'parent_provider_uuid': node_uuid,
            'name': '%s_fpga-0000:13:00.0-region0' % self.host})
        self.assertEqual(200, response.status_code, response.text)
        self._wait_until(
            lambda: self._placement_get(
                '/resource_providers/%s' % half_written) is None,
            'the half-written provider deleted')
        self.assertEqual(expected_a, self._placement_view()[1])
        complaints_before = len(self._placement_complaints())

        # 2. Placement goes away; the GPU is removed and the Intel regions
        # change. The database follows the agent all the same.
        self.placement.stop()
        reports_at_stop = self._reports_done()
        deployment.write_fleet(self.fleet_path, FLEET_WITHOUT_GPU)
        self._wait_for_reports(2, 'without the GPU, Placement down')
        without_gpu = dict(providers_a)
        del without_gpu[GPU_VGPU]
        deployables = self._wait_until(
            lambda: self._with_providers(without_gpu),
            'the GPU gone from the API')
        self.assertEqual(3, deployables[INTEL_REGION0]['num_accelerators'])
        self.assertNotIn(GPU_VGPU, deployables)

        # 3. A new card on the GPU's bus is a new device, with a new
        # provider uuid that Placement has never seen.
        deployment.write_fleet(self.fleet_path, FLEET_B)
        deployables_b = self._wait_until(
            lambda: self._with_providers(PROVIDERS_B),
            'the new card in the API')
        for name in (INTEL_REGION0, INTEL_REGION1, XILINX_REGION):
            self.assertEqual(deployables_a[name]['rp_uuid'],
                             deployables_b[name]['rp_uuid'], name)
        self.assertNotIn(deployables_b[NEW_XILINX_REGION]['rp_uuid'],
                         {deployable['rp_uuid']
                          for deployable in deployables_a.values()})

        # 4. A bind needs no Placement: it ends Bound.
        profile = self._expect(201, 'POST', '/v2/device_profiles', [{
            'name': 'outage-%s' % self.suffix,
            'groups': [{'resources:FPGA': '1',
                        'trait:CUSTOM_FPGA_REGION_' + XILINX_REGION_ID.upper():
                        'required'}]}])
        arq = self._expect(201, 'POST', '/v2/accelerator_requests',
                           {'device_profile_name': profile['name']})['arqs'][0]
        instance_uuid = str(uuid.uuid4())
        rp_uuid = deployables_b[XILINX_REGION]['rp_uuid']
        self._expect(202, 'PATCH', '/v2/accelerator_requests', {
            arq['uuid']: arq_tests.bind_ops(self.host, rp_uuid,
                                            instance_uuid)})
        bound = self._wait_until(
            lambda: self._arq_state(arq['uuid'], 'Bound'),
            'ARQ %s Bound with Placement down' % arq['uuid'])
        self.assertEqual((self.host, rp_uuid, instance_uuid),
                         (bound['hostname'], bound['device_rp_uuid'],
                          bound['instance_uuid']))
        # The bind's claim wrote its region's row (its lock: updated_at)
        # and nothing else of the inventory.
        after_bind = self._deployables()
        self.assertIsNotNone(after_bind[XILINX_REGION]['updated_at'])
        deployables_b[XILINX_REGION]['updated_at'] = \
            after_bind[XILINX_REGION]['updated_at']
        self.assertEqual(deployables_b, after_bind)

        # 5. Disabling a device is recorded; reads keep answering 200.
        intel = [device for device in self._expect(
            200, 'GET', '/v2/devices?hostname=%s' % self.host)['devices']
            if device['vendor'] == '0x8086']
        self.assertEqual(1, len(intel), intel)
        status, body = deployment.api_request(
            self.api_port, 'POST', '/v2/devices/%s/disable' % intel[0]['uuid'],
            headers={'OpenStack-API-Version': 'accelerator 2.3'})
        self.assertEqual(200, status, body)
        status, body = deployment.api_request(
            self.api_port, 'GET', '/v2/devices/%s' % intel[0]['uuid'],
            headers={'OpenStack-API-Version': 'accelerator 2.3'})
        self.assertEqual((200, 'maintaining'), (status, body['status']))
        for path in ('/v2/devices?hostname=%s' % self.host,
                     '/v2/deployables?hostname=%s' % self.host,
                     '/v2/accelerator_requests?instance=%s' % instance_uuid,
                     '/v2/device_profiles'):
            self._expect(200, 'GET', path)

        # 6. One warning per report and one for the disable of step 5, no
        # traceback, nothing else complaining about Placement.
        self._wait_for_reports(1, 'Placement still down')
        reports = self._reports_done() - reports_at_stop
        warnings = self._not_synced_warnings()
        # A report under way at either end of the count may fall outside it.
        self.assertLessEqual(abs(len(warnings) - (reports + 1)), 1,
                             '%d reports, warnings:\n%s'
                             % (reports, '\n'.join(warnings)))
        self.assertEqual(
            len(warnings),
            len(self._placement_complaints()) - complaints_before,
            '\n'.join(self._placement_complaints()))
        # The reason once per line, not again as the exception handled.
        self.assertEqual([], [line for line in warnings
                              if 'exception.PlacementUnavailable' in line])
        self.assertNotIn('Traceback', self.conductor.log())
        self.assertNotIn('Traceback', self.agent.log())

        # 7. Placement comes back with its data: within a few reports it
        # equals the database exactly, the removed GPU's provider deleted.
        self.placement.start()
        expected_b = self._expected_view(
            deployables_b, node_uuid, PROVIDERS_B,
            reserved={INTEL_REGION0, INTEL_REGION1})
        self._wait_until(lambda: self._placement_view() == (node_uuid,
                                                            expected_b),
                         'Placement equal to the database', timeout=10)
        self.assertIsNone(self._placement_get(
            '/resource_providers/%s' % deployables_a[GPU_VGPU]['rp_uuid']))
        self.assertEqual(deployables_b, self._deployables())
        # Cyborg allocates nothing: Nova does.
        for provider_uuid in expected_b:
            self.assertEqual({}, self._placement_get(
                '/resource_providers/%s/allocations'
                % provider_uuid)['allocations'])
        # Back in step, the warnings stop.
        warnings = len(self._not_synced_warnings())
        self._wait_for_reports(2, 'Placement back')
        self.assertEqual(warnings, len(self._not_synced_warnings()))
        self.assertEqual((node_uuid, expected_b), self._placement_view())

        # 8. The ARQ is deleted: nothing of the test is left bound.
        self._expect(204, 'DELETE', '/v2/accelerator_requests?arqs=%s'
                     % arq['uuid'])
        self._expect(404, 'GET', '/v2/accelerator_requests/%s' % arq['uuid'])

    def _arq_state(self, arq_uuid, state):
        """Probe: the ARQ once in ``state``; fails on BindFailed."""
        arq = self._expect(200, 'GET',
                           '/v2/accelerator_requests/%s' % arq_uuid)
        if arq['state'] == 'BindFailed' and state != 'BindFailed':
            self.fail('ARQ %s BindFailed: %s\n%s'
                      % (arq_uuid, arq.get('state_reason'), self._logs()))
        return arq if arq['state'] == state else None


class TestPlacementOutageMySQL(PlacementOutageMixin, base.TestCase):
    backend = 'mysql'
