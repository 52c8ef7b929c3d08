"""cyborg.rpc when nobody answers: the call ends as a ServiceUnavailable (503).

A call whose server is away times out as ``rpc.MessagingTimeout``, which is
still the oslo.messaging exception the binder and the agent tell apart. A
call while the broker is down (``rpc.MessageBusUnavailable``) needs a real
broker to stop: ``cyborg.tests.functional.services.test_broker_restart``.
These exceptions keep their class across RPC, so that the API answers 503
when a conductor could not reach an agent.
"""

import oslo_messaging

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import rpc
from cyborg.tests import base
from cyborg.tests.fixtures import messaging


class TestCallsThatNobodyAnswers(base.TestCase):

    def setUp(self):
        super().setUp()
        self.context = cyborg_context.get_admin_context()

    def _client(self):
        return rpc.get_client(oslo_messaging.Target(topic='cyborg-nobody',
                                                    server='host-1'))

    def test_unanswered_call_is_a_service_unavailable_timeout(self):
        self.useFixture(messaging.Messaging(conf.CONF))
        self.flags(rpc_response_timeout=1)

        error = self.assertRaises(oslo_messaging.MessagingTimeout,
                                  self._client().call, self.context, 'ping')

        self.assertIsInstance(error, rpc.MessagingTimeout)
        self.assertIsInstance(error, exception.ServiceUnavailable)
        self.assertEqual(503, error.code)
        self.assertIn('cyborg-nobody did not answer in time', error.message)


class Relay:
    """A server whose own call found nobody listening, as a conductor asking
    a dead agent does."""

    @oslo_messaging.expose
    def relay(self, context):
        raise rpc.ServerNotListening(topic='cyborg-agent')


class TestUnavailableAcrossRPC(base.TestCase):

    def test_a_server_unable_to_reach_another_answers_unavailable(self):
        bus = self.useFixture(messaging.Messaging(conf.CONF))
        bus.serve('cyborg-relay', 'host-1', [Relay()])
        client = rpc.get_client(oslo_messaging.Target(topic='cyborg-relay',
                                                      server='host-1'))

        error = self.assertRaises(rpc.ServerNotListening, client.call,
                                  cyborg_context.get_admin_context(), 'relay')

        self.assertEqual(503, error.code)
        self.assertEqual('Service unavailable: no cyborg-agent is listening; '
                         'it is down or reconnecting to the message bus.',
                         error.message)
