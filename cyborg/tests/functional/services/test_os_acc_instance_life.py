"""A whole instance life over the multi-process deployment, with os-acc and
with the ARQ API, ending in the same state.

cyborg-conductor, -api and two cyborg-agents (two compute nodes, each
with its own host name and fake devices) run as separate processes over
RabbitMQ, MariaDB and a real Placement served over HTTP (``deployment``).
One instance goes through boot, pause, reboot, shelve (its handles
released), unshelve on the other compute node (new handles there), resize
and delete twice: with os-acc, the test process acting as the compute node
the instance is on (``os_acc.configure`` with that node's cyborg.conf),
then with Nova's calls to the ARQ API over HTTP. Both must hold the same
ARQs and handles at every step, and leave every handle free and nothing in
Placement's allocations.
"""

import os
import uuid

import sqlalchemy as sa

from cyborg.api import auth
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import processes
from cyborg.tests.functional.services import test_arq_processes as scenario
from cyborg.tests.functional.services import test_os_acc_processes
import os_acc

WAIT_TIMEOUT = scenario.WAIT_TIMEOUT
REGION_A_TRAIT = scenario.region_trait(scenario.REGION_A_ID)
# The second compute node: one card of region type A, two handles.
FLEET_B = {'fpgas': [scenario.FPGA_A]}
ARQ = models.ARQ.__table__
AttachHandle = models.AttachHandle.__table__
Deployable = models.Deployable.__table__
Device = models.Device.__table__
DeviceProfile = models.DeviceProfile.__table__


class OsAccWay:
    """A compute driver with os-acc, on the node the instance is on."""

    name = 'os-acc'

    def __init__(self, test):
        self.test = test

    def start(self, instance, host, rp_uuid, flavor):
        self.test.as_compute_node(host)
        return os_acc.plug(instance, {'uuid': rp_uuid}, flavor)

    def attachments(self, instance, host, rp_uuid, flavor):
        """A driver rebuilding the guest plugs again: the same answer."""
        return self.start(instance, host, rp_uuid, flavor)

    def release(self, instance):
        return os_acc.unplug(instance)


class NovaWay:
    """Nova's calls to the ARQ API, over HTTP."""

    name = 'ARQ API'

    def __init__(self, test):
        self.test = test

    def start(self, instance, host, rp_uuid, flavor):
        arqs = self.test._expect(201, 'POST', '/v2/accelerator_requests', {
            'device_profile_name': flavor['accel:device_profile']})['arqs']
        self.test._expect(202, 'PATCH', '/v2/accelerator_requests', {
            arq['uuid']: scenario.bind_ops(host, rp_uuid, instance['uuid'])
            for arq in arqs})
        return self.attachments(instance, host, rp_uuid, flavor)

    def attachments(self, instance, host, rp_uuid, flavor):
        arqs = self.test._resolved(instance['uuid'])
        self.test.assertEqual({'Bound'}, {arq['state'] for arq in arqs},
                              arqs)
        return [{'pci_id': test_os_acc_processes.pci_id(
            arq['attach_handle_info'])} for arq in arqs]

    def release(self, instance):
        held = len(self.test._arqs_of(instance))
        self.test._expect(204, 'DELETE', '/v2/accelerator_requests?'
                          'instance=%s' % instance['uuid'])
        return held


class OsAccInstanceLifeTestsMixin(test_os_acc_processes.OsAccProcessesMixin):

    def as_compute_node(self, host):
        """Make os-acc in this process the compute node ``host``'s: its
        cyborg.conf, as on that node."""
        if self.compute_node == host:
            return
        self._forget_os_acc()
        path = os.path.join(self.state_path, 'compute-%s.conf' % host)
        processes.write_config(path, {
            'DEFAULT': {'transport_url': self.rabbit.transport_url,
                        'control_exchange': self.rabbit.control_exchange,
                        'host': host, 'rpc_response_timeout': 10},
            'conductor': {'bind_timeout': 30},
        })
        os_acc.configure(config_files=[path])
        self.compute_node = host

    def _region_of(self, host):
        """The provider of region A's card on ``host``."""
        with self.database.engine.connect() as connection:
            return connection.execute(sa.select(Deployable.c.rp_uuid).join(
                Device, Device.c.id == Deployable.c.device_id).where(
                Device.c.hostname == host,
                Deployable.c.name == scenario.REGION_A)).scalar_one()

    def _state(self):
        """Every ARQ (instance, state, host, provider, profile, project,
        attach handle) and the handles in use of each region."""
        with self.database.engine.connect() as connection:
            arqs = connection.execute(sa.select(
                ARQ.c.instance_uuid, ARQ.c.state, ARQ.c.hostname,
                ARQ.c.device_rp_uuid, DeviceProfile.c.name,
                ARQ.c.project_id, AttachHandle.c.attach_info,
            ).join(DeviceProfile, DeviceProfile.c.id == ARQ.c.device_profile_id
                   ).outerjoin(AttachHandle,
                               AttachHandle.c.id == ARQ.c.attach_handle_id)
            ).all()
        return (sorted(tuple(row) for row in arqs),
                {rp_uuid: sorted(self._in_use(rp_uuid).values())
                 for rp_uuid in self.regions})

    def _life(self, way, instance):
        """Boot, pause, reboot, shelve, unshelve on host B, resize, delete;
        the state after each step."""
        region_a, region_b = self.regions
        states = []
        # Boot on this host's region A: one handle.
        attached = way.start(instance, self.host, region_a, self.flavor)
        self.assertEqual(list(self._in_use(region_a).values()),
                         [entry['pci_id'] for entry in attached])
        states.append(self._state())
        # Pause and unpause: no call, nothing changes.
        self.assertEqual(states[-1], self._state())
        # Reboot: the guest is rebuilt with the same attachments.
        self.assertEqual(attached, way.attachments(instance, self.host,
                                                   region_a, self.flavor))
        self.assertEqual(states[-1], self._state())
        # Shelve (offload): released.
        self.assertEqual(1, way.release(instance))
        states.append(self._state())
        self.assertEqual(([], {region_a: [], region_b: []}), states[-1])
        # Unshelve on host B: new handles there.
        attached = way.start(instance, self.host_b, region_b, self.flavor)
        self.assertEqual(list(self._in_use(region_b).values()),
                         [entry['pci_id'] for entry in attached])
        self.assertEqual({}, self._in_use(region_a))
        states.append(self._state())
        # Resize to two accelerators, on host B.
        self.assertEqual(1, way.release(instance))
        attached = way.start(instance, self.host_b, region_b,
                             self.big_flavor)
        self.assertEqual(2, len(attached))
        self.assertEqual(2, len(self._in_use(region_b)))
        states.append(self._state())
        # Delete.
        self.assertEqual(2, way.release(instance))
        states.append(self._state())
        return states

    def test_an_instance_life_with_os_acc_and_with_the_arq_api(self):
        self._start_services(
            {'fpgas': [scenario.FPGA_A, scenario.FPGA_B],
             'gpus': [scenario.T4_GPU]},
            {'conductor': {'bind_sweep_interval': 1, 'bind_timeout': 30}})
        self.host_b = 'compute-b-%s' % self.suffix
        agent_b = self._start_agent(self.host_b, FLEET_B)
        self.compute_node = None
        self.addCleanup(self._forget_os_acc)
        # Each compute node is ready once its agent reported and
        # Placement has its providers.
        for host in (self.host, self.host_b):
            self.as_compute_node(host)
            self.assertIsNone(os_acc.initialize(timeout=WAIT_TIMEOUT))
        self.regions = [self._region_of(host)
                        for host in (self.host, self.host_b)]
        # Nova's flavors name the profiles.
        for name, count in (('one', '1'), ('two', '2')):
            self._expect(201, 'POST', '/v2/device_profiles', [{
                'name': '%s-%s' % (name, self.suffix),
                'groups': [{'resources:FPGA': count,
                            'trait:%s' % REGION_A_TRAIT: 'required'}]}])
        self.flavor = {'accel:device_profile': 'one-%s' % self.suffix,
                       'resources:VCPU': '2'}
        self.big_flavor = {'accel:device_profile': 'two-%s' % self.suffix,
                           'resources:VCPU': '4'}

        instance = {'uuid': str(uuid.uuid4()), 'name': 'life',
                    'project_id': auth.NOAUTH_PROJECT_ID,
                    'image_uuid': str(uuid.uuid4())}
        lives = {way.name: self._life(way, instance)
                 for way in (OsAccWay(self), NovaWay(self))}

        self.assertEqual(lives['os-acc'], lives['ARQ API'])
        self.assertEqual(0, self._arq_count())
        with self.database.engine.connect() as connection:
            providers = connection.execute(sa.select(
                Deployable.c.rp_uuid).where(
                Deployable.c.rp_uuid.is_not(None))).scalars().all()
        # Regions A and B and the vGPU type of this host, region A of B.
        self.assertEqual(4, len(providers))
        for rp_uuid in providers:
            self._assert_handles_free(rp_uuid)
            self.assertEqual({}, self._allocations(rp_uuid))
        self._assert_clean_stop([self.agent, agent_b])
        self._assert_clean_stop([self.api, self.conductor])


class TestOsAccInstanceLifeMySQL(OsAccInstanceLifeTestsMixin, base.TestCase):
    backend = 'mysql'
