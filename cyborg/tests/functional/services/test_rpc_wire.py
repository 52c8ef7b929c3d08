"""The local-dispatch shortcut against a real transport (RabbitMQ).

fake:// hands exceptions and tuples to the caller untouched; RabbitMQ shows
what a caller in another process really gets, which the local path must
reproduce exactly.
"""

import oslo_messaging

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import rpc
from cyborg.tests import base
from cyborg.tests.fixtures import messaging
from cyborg.tests.unit import test_rpc

TOPIC = 'cyborg-wire-test'


class TestLocalDispatchMatchesRabbit(base.TestCase):

    def setUp(self):
        super().setUp()
        rabbit = self.useFixture(messaging.RabbitIsolation())
        self.host = 'wire-%s' % rabbit.control_exchange
        self.messaging = self.useFixture(messaging.Messaging(
            conf.CONF, transport_url=rabbit.transport_url,
            control_exchange=rabbit.control_exchange))
        self.endpoint = test_rpc.Endpoint()
        self.messaging.serve(TOPIC, self.host, [self.endpoint])
        self.context = cyborg_context.RequestContext(
            user_id='user-a', project_id='project-b')
        self.client = rpc.get_client(
            oslo_messaging.Target(topic=TOPIC, server=self.host,
                                  version='1.0'), version_cap='1.2')

    def _wire_then_local(self, method, **kwargs):
        outcomes = []
        for _path in ('wire', 'local'):
            try:
                outcomes.append(self.client.call(self.context, method,
                                                 **kwargs))
            except Exception as error:
                outcomes.append(error)
            rpc.register_local_endpoint(TOPIC, self.host, self.endpoint)
        self.addCleanup(rpc.unregister_local_endpoint, TOPIC, self.host)
        return outcomes

    def test_results_are_equal(self):
        wire, local = self._wire_then_local('echo', value=('a', {'b': 1}))

        self.assertEqual(wire, local)
        self.assertEqual(['a', {'b': 1}], local['value'])

    def test_exceptions_have_the_same_class_on_both_paths(self):
        for method in ('missing_thing', 'builtin_error', 'foreign_error',
                       'not_exposed'):
            wire, local = self._wire_then_local(method)
            self.assertIsInstance(wire, Exception, method)
            self.assertEqual(type(wire).__name__, type(local).__name__,
                             method)
            self.assertEqual(type(wire).__mro__[1:], type(local).__mro__[1:],
                             method)
            rpc.unregister_local_endpoint(TOPIC, self.host)

    def test_cyborg_exception_keeps_class_code_and_kwargs(self):
        wire, local = self._wire_then_local('missing_thing')

        for error in (wire, local):
            self.assertIsInstance(error, exception.ResourceNotFound)
            self.assertEqual(404, error.code)
            self.assertEqual({'resource': 'Thing', 'key': 'uuid',
                              'value': '42'}, error.kwargs)

    def test_foreign_exception_is_a_remote_error_on_both_paths(self):
        wire, local = self._wire_then_local('foreign_error')

        for error in (wire, local):
            self.assertIsInstance(error, oslo_messaging.RemoteError)
            self.assertEqual('NotAllowedRemotely', error.exc_type)
