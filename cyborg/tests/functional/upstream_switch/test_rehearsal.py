"""The switch from OpenStack Cyborg 17.0.0 rehearsed (issue 34, point 4).

A real upstream Cyborg (``cyborg.tests.fixtures.upstream_cyborg``: its
conductor, API and two agents with its fake driver, its own MariaDB
database, RabbitMQ) runs two compute hosts on a real Placement. On it the
test does what a cloud does: device profiles (one of two groups), ARQs
bound to three instances as Nova binds them (one PATCH per instance, with
the instance's allocation against the device's provider in Placement, as
Nova's scheduler makes it), one ARQ left unbound, and host B's device
disabled. Then the switch, as an operator makes it: upstream's services
stopped, ``cyborg-dbsync import-upstream --dry-run`` (which changes
nothing), the import, a second import (nothing to do), and cyborg's own
conductor, API and agents started on the imported database with the same
Placement; the agents' fake fleet has the PCI addresses upstream's fake
driver reported.

What must hold afterwards: the same profiles by name and uuid; each bound
instance's ARQs answered to Nova's ``bind_state=resolved`` question as
upstream answered it; the unbound ARQ still unbound; host B's device still
disabled; no resource provider created or deleted and no allocation
changed; an instance's unbind and delete release its handles (and Nova's
deletion of its allocation the capacity); new binds take the free handles
only, until none is left.
"""

import json
import os
import uuid

import sqlalchemy as sa

from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import messaging
from cyborg.tests.fixtures import nova as nova_fixture
from cyborg.tests.fixtures import processes
from cyborg.tests.fixtures import upstream_cyborg
from cyborg.tests.functional.services import deployment
from cyborg.tests.functional.upstream_switch import cloud
from cyborg.tests.functional.services.test_arq_processes import bind_ops
from cyborg.tests.functional.services.test_arq_processes import UNBIND_OPS

HANDLES = upstream_cyborg.FAKE_HANDLES
# Our fake driver's card where upstream's fake driver reported its card:
# 0000:0c:00.0, its handles the 16 functions after it.
FLEET = {'fpgas': [{'vendor': '0xABCD', 'bus': '0c', 'first_vf': '00.1',
                    'regions': [{'vfs_per_pf': HANDLES}]}]}
DISABLED_VERSION = {'OpenStack-API-Version': 'accelerator 2.3'}


class UpstreamSwitchTest(cloud.UpstreamCloudMixin,
                         deployment.DeploymentMixin, base.TestCase):

    backend = 'mysql'
    placement_backend = 'mysql'

    def setUp(self):
        upstream_cyborg.require_upstream_venv()
        super().setUp()
        self.host_b = 'compute-b-%s' % self.suffix
        self.upstream = self.useFixture(upstream_cyborg.UpstreamCyborg(
            self.placement, [self.host, self.host_b],
            *self._upstream_bus()))
        self.services = list(self.upstream.services)

    def _upstream_bus(self):
        bus = self.useFixture(messaging.RabbitIsolation())
        return bus.transport_url, bus.control_exchange

    # -- Upstream, as a cloud uses it ----------------------------------------

    def _upstream_profiles(self):
        names = {'one': 'rehearsal-one-%s' % self.suffix,
                 'two': 'rehearsal-two-%s' % self.suffix,
                 'spare': 'rehearsal-spare-%s' % self.suffix}
        requests = [
            {'name': names['one'], 'description': 'one fake FPGA',
             'groups': [{'resources:FPGA': '1',
                         'trait:CUSTOM_FAKE_DEVICE': 'required'}]},
            {'name': names['two'], 'description': 'two, in two groups',
             'groups': [{'resources:FPGA': '1'}, {'resources:FPGA': '1'}]},
            {'name': names['spare'],
             'groups': [{'resources:FPGA': '1'}]},
        ]
        for request in requests:
            self._upstream(201, 'POST', '/v2/device_profiles', [request])
        profiles = self._upstream(200, 'GET', '/v2/device_profiles')
        return names, {profile['name']: profile
                       for profile in profiles['device_profiles']}

    # -- The switch ----------------------------------------------------------

    def _dbsync(self, *arguments):
        config_path = os.path.join(self.state_path, 'dbsync.conf')
        processes.write_config(config_path, {
            'database': {'connection': self.database.url}})
        return nova_fixture.run_checked(
            [processes.console_script('cyborg-dbsync'), '--config-file',
             config_path] + list(arguments))

    @staticmethod
    def _import_lines(verb):
        """What the import says it carries: two hosts' cards (each a
        device, its control path, one deployable with two attributes and
        16 handles), three profiles, five ARQs."""
        counts = {'devices': 2, 'controlpath_ids': 2, 'deployables': 2,
                  'attributes': 4, 'attach_handles': 2 * HANDLES,
                  'device_profiles': 3, 'extended_accelerator_requests': 5}
        return ['%s: %d %s, 0 already there, 0 not carried over'
                % (table, count, verb) for table, count in counts.items()]

    @staticmethod
    def _counted(output):
        return [line for line in output.splitlines()
                if 'already there' in line]

    def _row_counts(self):
        with self.database.engine.connect() as connection:
            return {table.name: connection.execute(
                        sa.select(sa.func.count()).select_from(table)
                    ).scalar_one()
                    for table in models.Base.metadata.sorted_tables}

    def _reported(self, host, agent):
        return len([line for line in agent.log().splitlines()
                    if 'Reported ' in line and ' of %s' % host in line])

    # -- Cyborg, afterwards --------------------------------------------------

    def _expect(self, status, method, path, body=None, headers=None):
        answer_status, answer = deployment.api_request(
            self.api_port, method, path, body, headers=headers, timeout=60)
        self.assertEqual(status, answer_status, '%s %s: %s\n%s' % (
            method, path, answer, self._logs()))
        return answer

    def _resolved(self, instance):
        path = ('/v2/accelerator_requests?instance=%s&bind_state=resolved'
                % instance)

        def probe():
            status, body = self._api('GET', path)
            if status not in (200, 423):
                self.fail('GET %s answered %s: %s\n%s'
                          % (path, status, body, self._logs()))
            return body['arqs'] if status == 200 else None

        return self._wait_until(probe, 'resolved ARQs of %s' % instance)

    def _handles_in_use(self, rp_uuid):
        """{handle uuid: in use} of the provider's attach handles."""
        with self.database.engine.connect() as connection:
            rows = connection.execute(
                sa.select(models.AttachHandle.uuid, models.AttachHandle.in_use)
                .join(models.Deployable, models.Deployable.id
                      == models.AttachHandle.deployable_id)
                .where(models.Deployable.rp_uuid == rp_uuid)).all()
        return {row.uuid: bool(row.in_use) for row in rows}

    def test_switch(self):
        # Upstream, used as a cloud uses it.
        names, profiles = self._upstream_profiles()
        deployables = {item['name']: item for item in self._upstream(
            200, 'GET', '/v2/deployables')['deployables']}
        rp_a = deployables['%s_FakeDevice' % self.host]['rp_uuid']
        rp_b = deployables['%s_FakeDevice' % self.host_b]['rp_uuid']
        booted = dict([
            self._upstream_boot(names['two'], self.host, rp_a),
            self._upstream_boot(names['one'], self.host, rp_a),
            self._upstream_boot(names['one'], self.host_b, rp_b)])
        instance_two, instance_one, instance_b = booted
        [unbound] = self._upstream_arqs(names['one'])
        devices = {device['hostname']: device for device in self._upstream(
            200, 'GET', '/v2/devices')['devices']}
        self._upstream(204, 'POST', '/v2/devices/%s/disable'
                       % devices[self.host_b]['uuid'])
        self.assertEqual((HANDLES, HANDLES), self._inventory(rp_b))
        providers = self._providers()
        allocations = {instance: self._allocations(instance)
                       for instance in booted}
        self.assertEqual({instance_two: {rp_a: {'FPGA': 2}},
                          instance_one: {rp_a: {'FPGA': 1}},
                          instance_b: {rp_b: {'FPGA': 1}}}, allocations)
        # Upstream's Nova was told of each bind.
        self.assertEqual(
            sorted(arq['uuid'] for arqs in booted.values() for arq in arqs),
            sorted(event['tag'] for event in self.upstream.nova.events))

        # The switch: upstream stopped, a dry run, the import, once more.
        self.upstream.stop()
        empty = self._row_counts()
        dry_run = self._dbsync('import-upstream', '--from',
                               self.upstream.database_url, '--dry-run')
        self.assertEqual(empty, self._row_counts(), dry_run)
        self.assertEqual(self._import_lines('to insert'),
                         self._counted(dry_run))
        self.assertIn('Dry run: nothing was written.', dry_run)
        self.assertNotIn('Not carried over', dry_run)
        output = self._dbsync('import-upstream', '--from',
                              self.upstream.database_url)
        self.assertEqual(self._import_lines('inserted'),
                         self._counted(output))
        imported = self._row_counts()
        output = self._dbsync('import-upstream', '--from',
                              self.upstream.database_url)
        self.assertIn('Nothing to do', output)
        self.assertEqual(imported, self._row_counts())

        # Cyborg on the imported database, the same Placement.
        self._start_services(FLEET)
        agent_b = self._start_agent(self.host_b, FLEET)
        self._wait_until(lambda: self._reported(self.host, self.agent)
                         and self._reported(self.host_b, agent_b),
                         'the first reports of %s and %s'
                         % (self.host, self.host_b))

        ours = {profile['name']: profile for profile in self._expect(
            200, 'GET', '/v2/device_profiles')['device_profiles']}
        self.assertEqual(cloud.profiles_as_carried(profiles),
                         cloud.profiles_as_carried(ours))
        for instance, upstream_arqs in booted.items():
            self.assertEqual(cloud.seen_by_nova(upstream_arqs),
                             cloud.seen_by_nova(self._resolved(instance)))
        arq = self._expect(200, 'GET', '/v2/accelerator_requests/%s'
                           % unbound['uuid'])
        self.assertEqual(('Initial', names['one'], None, None),
                         (arq['state'], arq['device_profile_name'],
                          arq['hostname'], arq['instance_uuid']))
        [device_b] = self._expect(
            200, 'GET', '/v2/devices?hostname=%s' % self.host_b,
            headers=DISABLED_VERSION)['devices']
        self.assertEqual('maintaining', device_b['status'])
        self.assertEqual((HANDLES, HANDLES), self._inventory(rp_b))
        self.assertEqual(providers, self._providers())
        self.assertEqual(allocations, {instance: self._allocations(instance)
                                       for instance in booted})

        # The instance of two ARQs goes: unbind, delete, as Nova does.
        held = {arq['attach_handle_uuid'] for arq in booted[instance_two]}
        self.assertEqual({True}, {self._handles_in_use(rp_a)[handle]
                                  for handle in held})
        self._expect(202, 'PATCH', '/v2/accelerator_requests', {
            arq['uuid']: UNBIND_OPS for arq in booted[instance_two]})
        self._expect(204, 'DELETE', '/v2/accelerator_requests?instance=%s'
                     % instance_two)
        self.assertEqual([], self._expect(
            200, 'GET', '/v2/accelerator_requests?instance=%s'
            % instance_two)['arqs'])
        self.assertEqual({False}, {self._handles_in_use(rp_a)[handle]
                                   for handle in held})
        response = self.placement.adapter.delete('/allocations/%s'
                                                 % instance_two)
        self.assertEqual(204, response.status_code, response.text)
        self.assertEqual(1, self._usage(rp_a))

        # New binds take the free handles of host A only, until none is
        # left: upstream's instance there keeps its own.
        kept = booted[instance_one][0]['attach_handle_uuid']
        taken = set()
        for _ in range(HANDLES - 1):
            instance = str(uuid.uuid4())
            [arq] = self._expect(201, 'POST', '/v2/accelerator_requests', {
                'device_profile_name': names['one']})['arqs']
            self._allocate(instance, rp_a, 1)
            self._expect(202, 'PATCH', '/v2/accelerator_requests', {
                arq['uuid']: bind_ops(self.host, rp_a, instance)})
            [bound] = self._resolved(instance)
            self.assertEqual('Bound', bound['state'], bound)
            taken.add(bound['attach_handle_uuid'])
        self.assertEqual(set(self._handles_in_use(rp_a)) - {kept}, taken)
        self.assertLessEqual(held, taken)
        [arq] = self._expect(201, 'POST', '/v2/accelerator_requests', {
            'device_profile_name': names['one']})['arqs']
        instance = str(uuid.uuid4())
        self._expect(202, 'PATCH', '/v2/accelerator_requests', {
            arq['uuid']: bind_ops(self.host, rp_a, instance)})
        [refused] = self._resolved(instance)
        self.assertEqual('BindFailed', refused['state'], refused)
        self.assertEqual(providers, self._providers())
        self.assertEqual(HANDLES, self._usage(rp_a))
        self.assertEqual(json.dumps(allocations[instance_one]),
                         json.dumps(self._allocations(instance_one)))
