"""Rolling upgrades: RPC version pins ([upgrade_levels]) and object backports.

An agent of the previous release is the real AgentManager answering only
RPC 1.2 (the version before release_arqs and programming at bind), served
on the fake transport as a service would serve it. A conductor pinned to
1.2 keeps binding through it, never sends it what it cannot read, and
refuses, with a reason, what needs a newer agent.
"""

import datetime

import fixtures
import oslo_messaging
from oslo_utils import timeutils

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import objects
from cyborg import rpc
from cyborg.agent import manager as agent_manager
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.conductor import bind_transactions
from cyborg.conductor import binder
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import releasing
from cyborg.objects import base as objects_base
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import messaging

HOST = 'compute-old'
ARQ = {'uuid': 'a9a0c4f8-1b61-4c3e-9d0a-3d1f6c1f2b01',
       'driver_name': 'fake_driver', 'deployable_name': 'fpga-x-region0',
       'attach_type': 'PCI', 'attach_info': {'bus': '5e'},
       'request_group': {}, 'bitstream_id': None}


class PreviousReleaseAgent(agent_manager.AgentManager):
    """The agent of the previous release: RPC 1.2."""

    target = oslo_messaging.Target(version='1.2')


class AgentPinTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(database.Database(backend='sqlite'))
        self.messaging = self.useFixture(messaging.Messaging(conf.CONF))
        self.context = cyborg_context.get_admin_context()
        self.messaging.serve(agent_rpcapi.TOPIC, HOST,
                             [PreviousReleaseAgent(host=HOST,
                                                   driver_names=[])])

    def test_a_pinned_conductor_binds_through_an_older_agent(self):
        agents = agent_rpcapi.AgentAPI(version_cap='1.2')
        answer = agents.prepare_arqs(self.context, HOST, [ARQ], timeout=10)
        # The agent answered (it has no such handle: it says so).
        self.assertEqual([ARQ['uuid']], list(answer))
        self.assertFalse(answer[ARQ['uuid']]['prepared'])
        self.assertIn('no longer reports', answer[ARQ['uuid']]['reason'])

    def test_a_pinned_conductor_never_sends_what_the_agent_cannot_read(self):
        agents = agent_rpcapi.AgentAPI(version_cap='1.2')
        with_bitstream = dict(ARQ, bitstream_id='0d4c8a1e-5b2f-4c3d-9e8f-'
                                                '7a6b5c4d3e2f')
        self.assertRaises(oslo_messaging.RPCVersionCapError,
                          agents.prepare_arqs, self.context, HOST,
                          [with_bitstream], timeout=10)
        self.assertFalse(agents.releases)
        self.assertTrue(agent_rpcapi.AgentAPI().releases)

    def test_an_unpinned_conductor_is_refused_by_the_older_agent(self):
        with_bitstream = dict(ARQ, bitstream_id='0d4c8a1e-5b2f-4c3d-9e8f-'
                                                '7a6b5c4d3e2f')
        error = self.assertRaises(
            oslo_messaging.MessagingException,
            agent_rpcapi.AgentAPI().prepare_arqs, self.context, HOST,
            [with_bitstream], timeout=10)
        self.assertIn('1.3', str(error))

    def _binder_decision(self, agents):
        now = timeutils.utcnow()
        work = bind_transactions.Work(
            arq_id=1, uuid=ARQ['uuid'], hostname=HOST,
            instance_uuid='5e1f0c2a-7b3d-4c8e-9f6a-1b2c3d4e5f60',
            started_at=now, deadline=now + datetime.timedelta(seconds=30),
            attach_handle_id=1, attach_type='PCI',
            attach_info=ARQ['attach_info'], attach_handle_taken_at=now,
            deployable_name=ARQ['deployable_name'],
            driver_name='fake_driver', bitstream_id='0d4c8a1e-5b2f-4c3d-'
                                                    '9e8f-7a6b5c4d3e2f')
        settings = binder.BindSettings(workers=1, bind_timeout=30,
                                       sweep_interval=5)
        return binder.Binder('conductor-1', settings, nova=lambda: None,
                             agents=agents).agent_calls.prepare(
                                 HOST, [work])[0]

    def test_a_bind_needing_a_newer_agent_fails_at_once_with_the_reason(self):
        pinned = self._binder_decision(agent_rpcapi.AgentAPI(version_cap='1.2'))
        unpinned = self._binder_decision(agent_rpcapi.AgentAPI())
        failed = bind_transactions.Outcome.FAILED
        self.assertEqual((failed, failed),
                         (pinned.outcome, unpinned.outcome))
        self.assertIn('refused', pinned.reason)
        self.assertIn('1.3', pinned.reason)
        self.assertIn('older release ([upgrade_levels] agent)',
                      unpinned.reason)

    def test_releases_are_skipped_for_pinned_agents(self):
        agents = agent_rpcapi.AgentAPI(version_cap='1.2')
        releaser = releasing.Releaser(agents)
        with self.assertLogs(releasing.LOG.name, 'DEBUG') as logs:
            releaser._release_on(self.context, HOST, [dict(
                ARQ, hold={'arq': ARQ['uuid'], 'taken_at': 'x'},
                arq_uuid=ARQ['uuid'])])
        self.assertIn('pinned to RPC 1.2', '\n'.join(logs.output))


class UpgradeLevelsConfigTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(database.Database(backend='sqlite'))
        self.useFixture(messaging.Messaging(conf.CONF))

    def test_the_conductor_pins_its_agents(self):
        self.flags(agent='1.2', group='upgrade_levels')
        manager = conductor_manager.ConductorManager(host='conductor-1')
        self.assertEqual('1.2', manager.binder.agents.version_cap)
        self.assertEqual('1.2', manager.programmer.agents.version_cap)

    def test_unpinned_is_this_release(self):
        manager = conductor_manager.ConductorManager(host='conductor-1')
        self.assertEqual(agent_rpcapi.AgentAPI.RPC_API_VERSION,
                         manager.binder.agents.version_cap)

    def test_a_pin_must_be_a_version(self):
        self.assertRaises(ValueError, self.flags, agent='latest',
                          group='upgrade_levels')


class ARQBackportTest(base.TestCase):

    def test_1_0_has_no_state_reason(self):
        arq = objects.ARQ(uuid=ARQ['uuid'], state='BindFailed',
                          state_reason='no free attach handle')
        primitive = arq.obj_to_primitive(target_version='1.0')
        self.assertEqual('1.0', primitive['cyborg_object.version'])
        self.assertNotIn('state_reason', primitive['cyborg_object.data'])
        self.assertEqual('BindFailed',
                         primitive['cyborg_object.data']['state'])
        current = arq.obj_to_primitive()
        self.assertEqual('no free attach handle',
                         current['cyborg_object.data']['state_reason'])


class CallerVersionsTest(base.TestCase):
    """A server answers each caller with the object versions it reads."""

    def setUp(self):
        super().setUp()
        self.messaging = self.useFixture(messaging.Messaging(conf.CONF))
        self.context = cyborg_context.get_admin_context()
        self.messaging.serve('upgrade-test', 'server-1', [ARQServer()])
        self.client = rpc.get_client(oslo_messaging.Target(
            topic='upgrade-test', server='server-1', version='1.0'))

    def _caller_reads(self, versions):
        self.useFixture(fixtures.MockPatch(
            'cyborg.objects.base.local_versions', return_value=versions))

    def test_a_caller_of_the_previous_release_gets_backported_objects(self):
        versions = dict(objects_base.local_versions(), ARQ='1.0')
        self._caller_reads(versions)
        primitives = []
        real_deserialize = objects_base.CyborgObjectSerializer.\
            deserialize_entity

        def keep(serializer, context, primitive):
            primitives.append(primitive)
            return real_deserialize(serializer, context, primitive)
        self.useFixture(fixtures.MockPatchObject(
            objects_base.CyborgObjectSerializer, 'deserialize_entity',
            keep))
        answer = self.client.call(self.context, 'arqs')
        self.assertEqual(['1.0', '1.0'], [
            primitive['cyborg_object.version'] for primitive in primitives
            if isinstance(primitive, dict)])
        self.assertEqual([False, False], [
            arq.obj_attr_is_set('state_reason') for arq in answer])
        self.assertEqual(['BindFailed', 'Bound'],
                         [arq.state for arq in answer])

    def test_a_caller_of_this_release_gets_every_field(self):
        answer = self.client.call(self.context, 'arqs')
        self.assertEqual('no free attach handle', answer[0].state_reason)

    def test_a_caller_newer_than_the_server_gets_the_servers_version(self):
        self._caller_reads(dict(objects_base.local_versions(), ARQ='1.7'))
        answer = self.client.call(self.context, 'arqs')
        self.assertEqual(objects.ARQ.VERSION, answer[0].VERSION)
        self.assertEqual('no free attach handle', answer[0].state_reason)

    def test_the_server_context_names_the_callers_versions(self):
        serializer = rpc.get_serializer()
        received = serializer.deserialize_context(
            serializer.serialize_context(self.context))
        self.assertEqual(objects_base.local_versions(),
                         received.peer_object_versions)
        # A caller of an older release sends no versions.
        received = serializer.deserialize_context(self.context.to_dict())
        self.assertIsNone(received.peer_object_versions)


class ARQServer:
    """An RPC endpoint answering with ARQs, one of them failed with a reason."""

    target = oslo_messaging.Target(version='1.0')

    @oslo_messaging.expose
    def arqs(self, context):
        return [objects.ARQ(uuid=ARQ['uuid'], state='BindFailed',
                            state_reason='no free attach handle'),
                objects.ARQ(uuid='c2f1b8e4-7d3a-4f5e-9b6c-0a1d2e3f4a5b',
                            state='Bound')]
