"""A compute node as os-acc sees it, in one process on the fake:// transport.

``ComputeNodeTestsBase`` serves a real ConductorManager (its binder, its
Placement client on a real in-process Placement) and a real AgentManager
with the fake driver's fleet ``inventory``; the agent sends its heartbeat
and reports its inventory through the conductor, as the service does.
``[DEFAULT] host`` is the agent's host, so os-acc's calls act as that
compute node. ``restart_conductor`` and ``restart_agent`` replace either
by a new instance on the same database (what survives is what is stored).
"""

import os

import fixtures
import sqlalchemy as sa

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg.agent import manager as agent_manager
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.agent.drivers import fake
from cyborg.clients import nova as nova_client
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import messaging
from cyborg.tests.fixtures import placement as placement_fixture
from os_acc import api as os_acc_api

HOST = 'compute-os-acc'
CONDUCTOR = 'conductor-1'
ARQ = models.ARQ.__table__
AttachHandle = models.AttachHandle.__table__
Deployable = models.Deployable.__table__
DeviceProfile = models.DeviceProfile.__table__

# Card 0: twenty handles; card 1: ten; card 2: its prepare fails; a T4
# with two vGPUs (MDEV handles).
INVENTORY = """
fpgas:
  - attach_type: PCI
    regions: [{pfs: 1, vfs_per_pf: 20}]
  - regions: [{pfs: 1, vfs_per_pf: 10}]
  - prepare: fail
gpus:
  - model: Tesla T4
    product_id: "0x1eb8"
    vgpu_types: [{type: nvidia-222, name: GRID T4-1B, instances: 2}]
"""
FPGA_SPECS = {'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}
VGPU_SPECS = {'resources:VGPU': '1'}


def reset_os_acc():
    """Forget os-acc's client of an earlier test."""
    with os_acc_api._State.lock:
        os_acc_api._State.configured = False
        os_acc_api._State.conductor = None
        os_acc_api._State.version_cap = None


class ComputeNodeTestsBase(base.TestCase):
    """A database, Placement, a conductor and the agent of HOST."""

    backend = 'sqlite'
    inventory = INVENTORY

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(self.backend))
        self.messaging = self.useFixture(messaging.Messaging(conf.CONF))
        self.placement = self.useFixture(
            placement_fixture.PlacementFixture())
        self.flags(host=HOST)
        self.flags(bind_timeout=30, bind_sweep_interval=1, group='conductor')
        nova_client.reset_client()
        self.addCleanup(nova_client.reset_client)
        reset_os_acc()
        self.addCleanup(reset_os_acc)
        self.context = cyborg_context.get_admin_context()
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'inventory.yaml')
        with open(path, 'w') as stream:
            stream.write(self.inventory)
        self.inventory_path = path
        self.conductor = None
        self.conductor_server = None
        self.start_conductor()
        self.agent = None
        self.agent_server = None
        self.start_agent()
        self.providers = self._providers()

    # -- The services ------------------------------------------------------

    def start_conductor(self):
        """Serve a new ConductorManager on the conductor topic."""
        self.conductor = conductor_manager.ConductorManager(host=CONDUCTOR)
        self.conductor_server = self.messaging.serve(
            conductor_rpcapi.TOPIC, CONDUCTOR, [self.conductor])
        self.addCleanup(self.conductor.binder.stop)

    def restart_conductor(self):
        """Stop serving the conductor and serve a new one instead."""
        self._stop(self.conductor_server)
        self.conductor.binder.stop()
        self.start_conductor()

    def start_agent(self, report=True):
        """Serve a new AgentManager with a new fake driver on HOST; send
        its heartbeat and, with ``report``, its inventory."""
        self.driver = fake.FakeDriver(self.inventory_path, host=HOST)
        self.agent = agent_manager.AgentManager(host=HOST, driver_names=[])
        self.agent.drivers = {'fake_driver': self.driver}
        self.agent_server = self.messaging.serve(agent_rpcapi.TOPIC, HOST,
                                                 [self.agent])
        self.addCleanup(self.driver.release_hangs)
        if report:
            self.agent.heartbeat(self.context)
            self.assertTrue(self.agent.report_inventory(self.context))

    def restart_agent(self):
        """Stop serving the agent and serve a new one, which reports."""
        self._stop(self.agent_server)
        self.start_agent()

    @staticmethod
    def _stop(server):
        # Stopping again at cleanup does nothing.
        server.stop()
        server.wait()

    # -- The database ------------------------------------------------------

    def _providers(self):
        """Provider uuid of each card's first deployable with a provider,
        FPGAs by bus, then the vGPU's."""
        with self.database.engine.connect() as connection:
            rows = connection.execute(sa.select(
                Deployable.c.name, Deployable.c.rp_uuid).where(
                Deployable.c.rp_uuid.is_not(None))).all()
        by_bus = {name.split(':')[1]: rp_uuid for name, rp_uuid in rows}
        return [by_bus[bus] for bus in sorted(by_bus)]

    def query(self, statement):
        with self.database.engine.connect() as connection:
            return connection.execute(statement).all()

    def arq_rows(self, instance_uuid=None):
        statement = sa.select(ARQ).order_by(ARQ.c.id)
        if instance_uuid is not None:
            statement = statement.where(ARQ.c.instance_uuid == instance_uuid)
        return self.query(statement)

    def handles_in_use(self, rp_uuid=None):
        """The attach handles marked in use (of ``rp_uuid``), by id."""
        statement = sa.select(AttachHandle.c.id).join(
            Deployable, Deployable.c.id == AttachHandle.c.deployable_id
        ).where(AttachHandle.c.in_use == sa.true())
        if rp_uuid is not None:
            statement = statement.where(Deployable.c.rp_uuid == rp_uuid)
        return sorted(row.id for row in self.query(statement))

    def double_allocations(self):
        """Attach handles held by more than one ARQ (none, ever)."""
        return self.query(sa.select(ARQ.c.attach_handle_id).where(
            ARQ.c.attach_handle_id.is_not(None)).group_by(
            ARQ.c.attach_handle_id).having(sa.func.count() > 1))

    def implicit_profiles(self):
        return self.query(sa.select(DeviceProfile.c.name).where(
            DeviceProfile.c.name.startswith('os-acc-')))
