"""Unbind and delete have the agents release what they prepared.

The fixture of ``test_bind_transactions`` (real agents with the fake
driver, which records every ``release``, over the fake:// transport):
``arqs.unbind`` and ``arqs.delete`` with the conductor's ``Releaser``, one
agent call per host after the commit, and the ordering that keeps a late
release from undoing a newer bind's prepare.
"""

import fixtures
import oslo_messaging
import sqlalchemy as sa
from oslo_utils import uuidutils

from cyborg import context as cyborg_context
from cyborg.agent import manager as agent_manager
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.agent.drivers import fake
from cyborg.conductor import arqs as conductor_arqs
from cyborg.conductor import inventory_report
from cyborg.conductor import releasing
from cyborg.tests import base
from cyborg.tests.unit.conductor import test_bind_transactions as cases

HOST = cases.HOST
OTHER = 'compute-0'


class CountingAgents:
    """An AgentAPI whose release_arqs calls are recorded and, while
    ``held``, kept back instead of sent (``send_held`` sends them)."""

    def __init__(self):
        self.real = agent_rpcapi.AgentAPI()
        self.calls = []
        self.held = False
        self.kept = []

    @property
    def releases(self):
        return self.real.releases

    @property
    def version_cap(self):
        return self.real.version_cap

    def release_arqs(self, context, host, handles, timeout=None):
        self.calls.append((host, handles))
        if self.held:
            self.kept.append((context, host, handles, timeout))
            return [{'released': True, 'stale': False, 'reason': None}
                    for _ in handles]
        return self.real.release_arqs(context, host, handles,
                                      timeout=timeout)

    def send_held(self):
        return [self.real.release_arqs(*call[:3], timeout=call[3])
                for call in self.kept]


class ReleaseTests(cases.BindingTestsBase):

    def setUp(self):
        super().setUp()
        self.agents = CountingAgents()
        self.releaser = releasing.Releaser(self.agents, timeout=10)
        self.nova_context = cyborg_context.RequestContext(
            project_id='project-1', roles=['member'], is_admin=True,
            has_service_token=True)

    def bound(self, card, instance=None):
        arq_uuid = self.make_arq(self.providers[card], instance)
        self.assertEqual({arq_uuid: 'Bound'}, self.binder.bind([arq_uuid]))
        arq = self.arq(arq_uuid)
        return arq_uuid, arq.attach_handle_info

    def region_name(self, card):
        with self.database.engine.connect() as connection:
            return connection.execute(sa.select(cases.Deployable.c.name).where(
                cases.Deployable.c.rp_uuid == self.providers[card])).scalar()

    def add_other_host(self):
        """A second agent, on OTHER, with the same fleet."""
        driver = fake.FakeDriver(self.driver._inventory_path, host=OTHER)
        agent = agent_manager.AgentManager(host=OTHER, driver_names=[])
        agent.drivers = {'fake_driver': driver}
        inventory_report.apply(self.context, OTHER, agent.collect_inventory())
        self.messaging.serve(agent_rpcapi.TOPIC, OTHER, [agent])
        with self.database.engine.connect() as connection:
            rp_uuid = connection.execute(sa.select(
                cases.Deployable.c.rp_uuid).join(
                cases.Device,
                cases.Device.c.id == cases.Deployable.c.device_id).where(
                cases.Device.c.hostname == OTHER,
                cases.Deployable.c.rp_uuid.is_not(None)).order_by(
                cases.Deployable.c.id)).scalars().first()
        return driver, rp_uuid

    def test_unbind_releases_each_handle_with_one_call_per_host(self):
        other_driver, other_rp = self.add_other_host()
        instance = uuidutils.generate_uuid()
        here = [self.make_arq(self.providers[card], instance)
                for card in (0, 0, 3)]
        there = self.make_arq(other_rp, instance, hostname=OTHER)
        self.assertEqual(['Bound'] * 4,
                         list(self.binder.bind(here + [there]).values()))
        infos = {arq_uuid: self.arq(arq_uuid).attach_handle_info
                 for arq_uuid in here + [there]}

        conductor_arqs.unbind(self.nova_context, here + [there], self.releaser)

        self.assertEqual(sorted([HOST, OTHER]),
                         sorted(host for host, _ in self.agents.calls))
        calls = dict(self.agents.calls)
        self.assertEqual(sorted(here), sorted(
            handle['arq_uuid'] for handle in calls[HOST]))
        self.assertEqual(sorted(
            [(self.region_name(0), infos[here[0]]),
             (self.region_name(0), infos[here[1]]),
             (self.region_name(3), infos[here[2]])], key=str),
            sorted(self.driver.releases, key=str))
        self.assertEqual(1, len(other_driver.releases))
        self.assertEqual(infos[there], other_driver.releases[0][1])

    def test_delete_releases_the_handles_of_bound_arqs_only(self):
        instance = uuidutils.generate_uuid()
        arq_uuid, info = self.bound(0, instance)
        never_bound = self.make_arq(self.providers[0], instance)
        self.execute(sa.update(cases.ARQ).where(
            cases.ARQ.c.uuid == never_bound).values(state='Unbound',
                                                     hostname=None))

        conductor_arqs.delete(self.nova_context, instance_uuid=instance,
                    releaser=self.releaser)

        self.assertEqual([(self.region_name(0), info)], self.driver.releases)
        [(host, handles)] = self.agents.calls
        self.assertEqual([arq_uuid], [handle['arq_uuid']
                                      for handle in handles])

    def test_an_agent_that_cannot_release_does_not_fail_the_unbind(self):
        logger = self.useFixture(fixtures.FakeLogger(level='WARNING'))

        def broken(*args, **kwargs):
            raise oslo_messaging.MessagingTimeout('gone')

        self.agents.real.release_arqs = broken
        arq_uuid, _ = self.bound(0)

        conductor_arqs.unbind(self.nova_context, [arq_uuid], self.releaser)

        self.assertEqual('Unbound', self.arq(arq_uuid).state)
        self.assertEqual(0, self.handles_in_use())
        self.assertEqual(1, logger.output.count(
            'did not release the attach handles of'))

    def test_a_late_release_does_not_undo_a_newer_prepare(self):
        first, info = self.bound(0)
        self.agents.held = True
        conductor_arqs.unbind(self.nova_context, [first], self.releaser)
        # The handle is given to the next bind before the agent hears of
        # the release.
        second, second_info = self.bound(0)
        self.assertEqual(info, second_info)

        [answers] = self.agents.send_held()

        self.assertEqual([{'released': False, 'stale': True,
                           'reason': 'prepared for a later bind since'}],
                         answers)
        self.assertEqual([], self.driver.releases)
        self.agents.held = False
        conductor_arqs.unbind(self.nova_context, [second], self.releaser)
        self.assertEqual([(self.region_name(0), info)], self.driver.releases)

    def test_a_release_before_the_bind_prepared_refuses_the_prepare(self):
        arq_uuid = self.make_arq(self.providers[0])
        real_prepare_arqs = self.agent.prepare_arqs
        answers = []
        prepared = []

        def unbound_meanwhile(context, arqs, timeout=None):
            # The unbind commits, and its release reaches the agent,
            # before the bind's prepare does.
            conductor_arqs.unbind(self.nova_context, [arq_uuid],
                                  self.releaser)
            answers.append(real_prepare_arqs(context, arqs,
                                             timeout=timeout))
            return answers[-1]

        unbound_meanwhile.exposed = True
        self.agent.prepare_arqs = unbound_meanwhile
        self.driver.prepare = lambda *args, **kwargs: prepared.append(args)

        self.assertEqual({}, self.binder.bind([arq_uuid]))

        self.assertEqual([], prepared)
        self.assertIn('before the agent prepared it',
                      answers[0][arq_uuid]['reason'])
        self.assertEqual('Unbound', self.arq(arq_uuid).state)
        self.assertEqual(1, len(self.driver.releases))
        self.assertEqual(0, self.handles_in_use())


class SQLiteReleaseTests(ReleaseTests, base.TestCase):
    pass
