"""The claim of a bind batch (``bind_transactions.claim``) and the
statements a whole batch costs.

They run as the binder runs them (``Binder.bind``), against a real agent
with the fake driver: the agent is a real AgentManager served over the
fake:// transport, its inventory reported into the test database by the
real inventory report; only Nova is replaced, by a recorder of the events
the binder sends (``cyborg.tests.unit.clients.test_nova`` covers the real
client). ARQs are recorded in BindStarted directly, as ``arqs.record_bind``
records them. ``BindingTestsBase`` is also the fixture of
``test_bind_finishing``, ``test_agent_calls``, ``test_bind_sweep`` and
``test_binder``.
"""

import dataclasses
import datetime
import os
import threading
import time

import fixtures
import sqlalchemy as sa
from oslo_utils import uuidutils

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import objects
from cyborg.agent import manager as agent_manager
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.agent.drivers import fake
from cyborg.conductor import bind_transactions
from cyborg.conductor import binder as conductor_binder
from cyborg.conductor import inventory_report
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import messaging
from cyborg.tests.unit.db import records
from cyborg.tests.unit.objects import test_list_statement_counts

HOST = 'compute-1'
ARQ = models.ARQ.__table__
AttachHandle = models.AttachHandle.__table__
Deployable = models.Deployable.__table__
Device = models.Device.__table__
# The binder's settings in these tests; make_binder changes some.
SETTINGS = conductor_binder.BindSettings(workers=4, bind_timeout=30,
                                         sweep_interval=1)

# Card 0: four handles; card 1: its prepare fails; card 2: its prepare
# hangs; card 3: eight handles.
INVENTORY = """
fpgas:
  - regions: [{pfs: 1, vfs_per_pf: 4}]
  - prepare: fail
  - prepare: hang
  - regions: [{pfs: 1, vfs_per_pf: 8}]
"""


class RecordingNova:
    """Stands in for NovaClient: keeps each send_events call's events."""

    def __init__(self, configured=True):
        self.sent = []
        self.lock = threading.Lock()
        # False: Nova cannot be reached (the events are not delivered).
        self.reachable = True
        # False: no [nova] (the real client then sends nothing).
        self.configured = configured

    def is_configured(self):
        return self.configured

    def send_events(self, events):
        # Unconfigured, the real client only logs them (as not sent).
        with self.lock:
            self.sent.append(list(events))
        return self.reachable and self.configured

    def events(self):
        with self.lock:
            return [event for batch in self.sent for event in batch]


def wait_for(predicate, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


class BindingTestsBase:
    """A database, an agent on HOST with four fake cards, and a binder."""

    backend = 'sqlite'
    # The fake driver's fleet file: cards on buses 0x10, 0x11, ...
    inventory = INVENTORY

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(self.backend))
        self.messaging = self.useFixture(messaging.Messaging(conf.CONF))
        self.context = cyborg_context.get_admin_context()
        self.profile = records.make_device_profile(self.context)
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'inventory.yaml')
        with open(path, 'w') as stream:
            stream.write(self.inventory)
        self.driver = fake.FakeDriver(path, host=HOST)
        self.agent = agent_manager.AgentManager(host=HOST, driver_names=[])
        self.agent.drivers = {'fake_driver': self.driver}
        inventory_report.apply(self.context, HOST,
                               self.agent.collect_inventory())
        self.messaging.serve(agent_rpcapi.TOPIC, HOST, [self.agent])
        # Registered after the server: runs before it stops.
        self.addCleanup(self.driver.release_hangs)
        self.providers = self._providers()
        self.nova = RecordingNova()
        self.binder = self.make_binder('conductor-1')

    def make_binder(self, host, nova=None, **settings):
        """A Binder sending events to ``nova`` (``self.nova`` by default),
        with SETTINGS changed by ``settings``."""
        nova = self.nova if nova is None else nova
        binder = conductor_binder.Binder(
            host, dataclasses.replace(SETTINGS, **settings),
            nova=lambda: nova)
        self.addCleanup(binder.stop)
        return binder

    def claim(self, arq_uuids, owner, now=None):
        """``claim`` as a binder with SETTINGS runs it."""
        return bind_transactions.claim(
            self.context, arq_uuids, owner,
            now or datetime.datetime.utcnow(), SETTINGS.bind_time_limit,
            SETTINGS.lease)

    def _providers(self):
        """Provider uuid of each card's first region, by card number."""
        with self.database.engine.connect() as connection:
            rows = connection.execute(sa.select(
                Deployable.c.name, Deployable.c.rp_uuid).where(
                Deployable.c.rp_uuid.is_not(None))).all()
        by_bus = {name.split(':')[1]: rp_uuid for name, rp_uuid in rows}
        return [by_bus[bus] for bus in sorted(by_bus)]

    def make_arq(self, rp_uuid, instance_uuid=None, hostname=HOST):
        arq = records.make_arq(
            self.context, self.profile, state='BindStarted',
            hostname=hostname, device_rp_uuid=rp_uuid,
            instance_uuid=instance_uuid or uuidutils.generate_uuid(),
            project_id='project-1')
        return arq.uuid

    def arq(self, arq_uuid):
        return objects.ARQ.get_by_uuid(self.context, arq_uuid)

    def arq_row(self, arq_uuid):
        with self.database.engine.connect() as connection:
            return connection.execute(sa.select(ARQ).where(
                ARQ.c.uuid == arq_uuid)).one()

    def states(self, arq_uuids):
        return [self.arq(arq_uuid).state for arq_uuid in arq_uuids]

    def handles_in_use(self):
        with self.database.engine.connect() as connection:
            return connection.execute(sa.select(sa.func.count()).where(
                AttachHandle.c.in_use == sa.true())).scalar()

    def execute(self, statement):
        with self.database.engine.begin() as connection:
            return connection.execute(statement)

    def owner_of(self, arq_uuid):
        """Who holds the ARQ's lease (its ``bind_owner``)."""
        with self.database.engine.connect() as connection:
            return connection.execute(sa.select(ARQ.c.bind_owner).where(
                ARQ.c.uuid == arq_uuid)).scalar()

    def lease_expiry(self, arq_uuid):
        """When the ARQ's lease runs out."""
        with self.database.engine.connect() as connection:
            return connection.execute(sa.select(
                ARQ.c.bind_lease_expires_at).where(
                ARQ.c.uuid == arq_uuid)).scalar()


class ClaimOutcomeTests(BindingTestsBase):
    """What ``claim`` makes of the ARQs of a batch, and the handle it gives."""

    def test_bind_gives_a_free_handle_of_the_provider_and_tells_nova(self):
        instance = uuidutils.generate_uuid()
        arq_uuid = self.make_arq(self.providers[0], instance)

        ended = self.binder.bind([arq_uuid])

        self.assertEqual({arq_uuid: 'Bound'}, ended)
        arq = self.arq(arq_uuid)
        self.assertEqual('Bound', arq.state)
        self.assertEqual('TEST_PCI', arq.attach_handle_type)
        self.assertEqual({'domain': '0000', 'bus': '10', 'device': '01',
                          'function': '0'}, arq.attach_handle_info)
        handle = objects.AttachHandle.get_by_uuid(self.context,
                                                  arq.attach_handle_uuid)
        self.assertTrue(handle.in_use)
        self.assertIsNotNone(arq.deployable_id)
        self.assertEqual(1, self.handles_in_use())
        self.assertEqual([[{'name': 'accelerator-request-bound',
                            'server_uuid': instance, 'tag': arq_uuid,
                            'status': 'completed'}]], self.nova.sent)

    def test_unknown_provider_fails(self):
        arq_uuid = self.make_arq(uuidutils.generate_uuid())

        self.assertEqual({arq_uuid: 'BindFailed'},
                         self.binder.bind([arq_uuid]))
        self.assertEqual('failed', self.nova.events()[0]['status'])
        self.assertEqual(0, self.handles_in_use())

    def test_provider_of_another_host_fails(self):
        arq_uuid = self.make_arq(self.providers[0], hostname='compute-2')

        self.assertEqual({arq_uuid: 'BindFailed'},
                         self.binder.bind([arq_uuid]))
        self.assertIsNone(self.arq(arq_uuid).attach_handle_uuid)
        self.assertEqual(0, self.handles_in_use())

    def test_disabled_device_fails(self):
        self.execute(sa.update(Device).values(status='maintaining'))
        arq_uuid = self.make_arq(self.providers[0])

        self.assertEqual({arq_uuid: 'BindFailed'},
                         self.binder.bind([arq_uuid]))
        self.assertEqual(0, self.handles_in_use())

    def test_a_provider_of_another_resource_class_fails(self):
        self.profile = records.make_device_profile(
            self.context, name='vgpu', groups=[{'resources:VGPU': '1'}])
        arq_uuid = self.make_arq(self.providers[0])

        self.assertEqual({arq_uuid: 'BindFailed'},
                         self.binder.bind([arq_uuid]))
        self.assertEqual('resource provider %s offers FPGA, not the VGPU the '
                         'request group asks for' % self.providers[0],
                         self.arq(arq_uuid).state_reason)
        self.assertEqual(0, self.handles_in_use())
        self.assertEqual('failed', self.nova.events()[0]['status'])

    def _give_traits(self, rp_uuid, *traits):
        with self.database.engine.connect() as connection:
            deployable_id = connection.execute(sa.select(
                Deployable.c.id).where(
                Deployable.c.rp_uuid == rp_uuid)).scalar_one()
        for number, trait in enumerate(traits):
            objects.Attribute(deployable_id=deployable_id,
                              key='trait%d' % number,
                              value=trait).create(self.context)

    def _bind_with_group(self, group):
        self.profile = records.make_device_profile(
            self.context, name='traits', groups=[group])
        arq_uuid = self.make_arq(self.providers[0])
        return arq_uuid, self.binder.bind([arq_uuid])[arq_uuid]

    def test_a_provider_with_the_required_traits_binds(self):
        self._give_traits(self.providers[0], 'CUSTOM_A', 'CUSTOM_B')
        arq_uuid, state = self._bind_with_group({
            'resources:FPGA': '1', 'trait:CUSTOM_A': 'required',
            'trait:CUSTOM_B': 'required', 'trait:OWNER_CYBORG': 'required',
            'trait:CUSTOM_C': 'forbidden'})
        self.assertEqual('Bound', state)

    def test_a_provider_lacking_a_required_trait_fails(self):
        self._give_traits(self.providers[0], 'CUSTOM_A')
        arq_uuid, state = self._bind_with_group({
            'resources:FPGA': '1', 'trait:CUSTOM_A': 'required',
            'trait:CUSTOM_GZIP': 'required'})
        self.assertEqual('BindFailed', state)
        self.assertEqual('resource provider %s lacks the trait CUSTOM_GZIP '
                         'the request group requires' % self.providers[0],
                         self.arq(arq_uuid).state_reason)
        self.assertEqual(0, self.handles_in_use())

    def test_a_provider_with_a_forbidden_trait_fails(self):
        self._give_traits(self.providers[0], 'CUSTOM_A', 'CUSTOM_B')
        arq_uuid, state = self._bind_with_group({
            'resources:FPGA': '1', 'trait:CUSTOM_B': 'forbidden'})
        self.assertEqual('BindFailed', state)
        self.assertEqual('resource provider %s has the trait CUSTOM_B the '
                         'request group forbids' % self.providers[0],
                         self.arq(arq_uuid).state_reason)

    def test_more_arqs_than_handles_bind_as_many_as_there_are_handles(self):
        instance = uuidutils.generate_uuid()
        arq_uuids = [self.make_arq(self.providers[0], instance)
                     for _ in range(6)]

        ended = self.binder.bind(arq_uuids)

        self.assertEqual(['Bound'] * 4 + ['BindFailed'] * 2,
                         sorted(ended.values(), key=len))
        bound = [self.arq(arq_uuid) for arq_uuid in arq_uuids
                 if ended[arq_uuid] == 'Bound']
        self.assertEqual(4, len({arq.attach_handle_uuid for arq in bound}))
        self.assertEqual(4, self.handles_in_use())
        # One request for the instance's six ARQs.
        [events] = self.nova.sent
        self.assertEqual(sorted(arq_uuids),
                         sorted(event['tag'] for event in events))

    def test_handle_already_in_use_is_not_given(self):
        self.execute(sa.update(AttachHandle).values(in_use=True))
        arq_uuid = self.make_arq(self.providers[0])

        self.assertEqual({arq_uuid: 'BindFailed'},
                         self.binder.bind([arq_uuid]))

    def test_arq_not_in_bind_started_is_left_alone(self):
        arq_uuid = self.make_arq(self.providers[0])
        self.execute(sa.update(ARQ).values(state='Unbound'))

        self.assertEqual({}, self.binder.bind([arq_uuid]))
        self.assertEqual('Unbound', self.arq(arq_uuid).state)
        self.assertEqual([], self.nova.sent)


class StatementCountTests(BindingTestsBase):
    """A batch costs the same statements for one ARQ as for eight."""

    # claim: take the leases, read the leased ARQs, lock the deployables
    # by writing them (a lock a Galera cluster certifies) and read which
    # are being programmed, lock the free handles (with whether an ARQ holds
    # one), take them, record them on the ARQs. finish: lock the
    # instances' ARQs, append the binds to their deployables' history (one
    # INSERT ... SELECT), end the binds (leasing their events). Then the
    # events Nova was given are no longer owed (one more).
    CLAIM = 7
    FINISH = 3

    def count(self, arq_count, binder=None):
        instance = uuidutils.generate_uuid()
        arq_uuids = [self.make_arq(self.providers[3], instance)
                     for _ in range(arq_count)]
        with test_list_statement_counts.counting_statements(
                self.database.engine) as statements:
            ended = (binder or self.binder).bind(arq_uuids)
        self.assertEqual(['Bound'] * arq_count, list(ended.values()))
        self.execute(sa.update(ARQ).values(state='Unbound',
                                           attach_handle_id=None))
        self.execute(sa.update(AttachHandle).values(in_use=False))
        return len(statements)

    def test_statements_do_not_grow_with_the_batch(self):
        self.assertEqual(self.count(1), self.count(8))

    def test_a_bind_costs_claim_finish_and_the_events_sent(self):
        self.assertEqual(self.CLAIM + self.FINISH + 1, self.count(8))

    def test_without_nova_nothing_is_written_after_finish(self):
        binder = self.make_binder(
            'conductor-2', nova=RecordingNova(configured=False))
        self.assertEqual(self.CLAIM + self.FINISH, self.count(8, binder))


class SQLiteClaimOutcomeTests(ClaimOutcomeTests, base.TestCase):
    pass


class SQLiteStatementCountTests(StatementCountTests, base.TestCase):
    pass
