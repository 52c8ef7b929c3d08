"""os-acc's initialize, and the refusals of a conductor that cannot serve it.

initialize() returns once the host's agent is up, has reported and its
providers are in Placement; the conductor wakes it when it applies the
host's report. Otherwise it raises CyborgAgentUnavailable with the reason.
"""

from concurrent import futures
import datetime
import time
import uuid

import oslo_messaging
import sqlalchemy as sa

from cyborg.conductor import os_acc_calls
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db import models
from cyborg.tests.unit.os_acc import compute_node
import os_acc

Service = models.Service.__table__


class ReadyHostTests(compute_node.ComputeNodeTestsBase):

    def test_a_reported_host_is_ready_and_published(self):
        self.assertIsNone(os_acc.initialize(timeout=5))

        providers = self.placement.adapter.get(
            '/resource_providers?in_tree=%s' % self._compute_node()).json()
        self.assertTrue(set(self.providers) <= {
            provider['uuid'] for provider in providers['resource_providers']})

    def test_an_agent_without_heartbeat_is_unavailable(self):
        with self.database.engine.begin() as connection:
            connection.execute(sa.update(Service).values(
                last_seen_up=datetime.datetime(2000, 1, 1)))
        started = time.monotonic()

        error = self.assertRaises(os_acc.CyborgAgentUnavailable,
                                  os_acc.initialize, timeout=1.5)

        self.assertLess(time.monotonic() - started, 5)
        self.assertEqual(compute_node.HOST, error.host)
        self.assertIn('has sent no heartbeat', str(error))
        self.assertIsInstance(error, os_acc.CyborgUnavailable)

    def test_a_stopped_conductor_is_unavailable(self):
        self._stop(self.conductor_server)

        error = self.assertRaises(os_acc.CyborgAgentUnavailable,
                                  os_acc.initialize, timeout=2)

        self.assertIn('cyborg-conductor did not answer', str(error))

    def _compute_node(self):
        found = self.placement.adapter.get(
            '/resource_providers?name=%s' % compute_node.HOST).json()
        return found['resource_providers'][0]['uuid']


class FirstReportTests(compute_node.ComputeNodeTestsBase):
    """A host whose agent has not reported yet."""

    def start_agent(self, report=False):
        super().start_agent(report=report)

    def test_initialize_waits_for_the_first_report(self):
        self.agent.heartbeat(self.context)
        with futures.ThreadPoolExecutor(max_workers=1) as executor:
            started = time.monotonic()
            future = executor.submit(os_acc.initialize, 30)
            # initialize is waiting in the conductor for the report.
            time.sleep(0.5)
            self.assertFalse(future.done())
            self.assertTrue(self.agent.report_inventory(self.context))
            self.assertIsNone(future.result(timeout=10))
        # Woken by the report, not at the end of a wait.
        self.assertLess(time.monotonic() - started,
                        os_acc_calls.MAX_STATUS_WAIT)

    def test_without_a_report_the_reason_says_so(self):
        self.agent.heartbeat(self.context)

        error = self.assertRaises(os_acc.CyborgAgentUnavailable,
                                  os_acc.initialize, timeout=1.5)

        self.assertIn('has not reported yet', str(error))

    def test_the_conductor_answers_the_status(self):
        api = conductor_rpcapi.ConductorAPI()
        status = api.host_status(self.context, compute_node.HOST)
        self.assertEqual(
            {'host': compute_node.HOST, 'agent_up': False, 'reported': False,
             'published': False, 'ready': False},
            {key: value for key, value in status.items() if key != 'reason'})

        self.agent.heartbeat(self.context)
        self.agent.report_inventory(self.context)

        status = api.host_status(self.context, compute_node.HOST)
        self.assertEqual(
            {'host': compute_node.HOST, 'agent_up': True, 'reported': True,
             'published': True, 'ready': True, 'reason': None}, status)


class PinnedConductorTests(compute_node.ComputeNodeTestsBase):
    """[upgrade_levels] conductor below 1.4: os-acc's calls are refused."""

    def setUp(self):
        super().setUp()
        self.flags(conductor='1.3', group='upgrade_levels')

    def test_the_client_refuses_with_the_pin_in_the_message(self):
        api = conductor_rpcapi.ConductorAPI(version_cap='1.3')
        calls = [
            (api.plug_instance, (self.context, str(uuid.uuid4()),
                                 compute_node.HOST, self.providers[0], 'p')),
            (api.unplug_instance, (self.context, str(uuid.uuid4()))),
            (api.host_status, (self.context, compute_node.HOST)),
        ]
        for method, args in calls:
            error = self.assertRaises(conductor_rpcapi.VersionPinned, method,
                                      *args)
            self.assertIsInstance(error, oslo_messaging.RPCVersionCapError)
            self.assertEqual(
                '%s needs conductor RPC version 1.4, but [upgrade_levels] '
                'conductor pins 1.3: upgrade every cyborg-conductor, then '
                'remove the pin' % method.__name__, str(error))

    def test_os_acc_says_why(self):
        error = self.assertRaises(os_acc.CyborgAgentUnavailable,
                                  os_acc.initialize, timeout=30)
        self.assertIn('pins 1.3', str(error))
        error = self.assertRaises(
            os_acc.CyborgUnavailable, os_acc.plug,
            {'uuid': str(uuid.uuid4())}, {'uuid': self.providers[0]},
            compute_node.FPGA_SPECS)
        self.assertIn('pins 1.3', str(error))
        error = self.assertRaises(os_acc.CyborgUnavailable, os_acc.unplug,
                                  {'uuid': str(uuid.uuid4())})
        self.assertIn('pins 1.3', str(error))
        self.assertEqual([], self.arq_rows())

    def test_calls_of_1_3_still_go_through(self):
        api = conductor_rpcapi.ConductorAPI(version_cap='1.3')
        self.assertEqual(compute_node.CONDUCTOR, api.ping(self.context))


class OlderConductorTests(compute_node.ComputeNodeTestsBase):
    """A conductor of the previous release (RPC 1.3) and no pin."""

    def start_conductor(self):
        super().start_conductor()
        self.conductor.target = oslo_messaging.Target(version='1.3')

    def test_os_acc_says_the_conductor_is_older(self):
        error = self.assertRaises(
            os_acc.CyborgUnavailable, os_acc.plug,
            {'uuid': str(uuid.uuid4())}, {'uuid': self.providers[0]},
            compute_node.FPGA_SPECS)
        self.assertIn('older release', str(error))
        error = self.assertRaises(os_acc.CyborgAgentUnavailable,
                                  os_acc.initialize, timeout=30)
        self.assertIn('older release', str(error))
