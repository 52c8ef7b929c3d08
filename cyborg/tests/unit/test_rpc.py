"""cyborg.rpc: the local-dispatch shortcut behaves like the fake:// wire."""

import logging
import threading

import fixtures
import oslo_messaging

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import objects
from cyborg import rpc
from cyborg.tests import base
from cyborg.tests.fixtures import messaging

TOPIC = 'cyborg-test'
HOST = 'host-1'


class NotAllowedRemotely(Exception):
    """Lives in a module that is not in rpc.ALLOWED_EXMODS."""


class Endpoint:
    """A small endpoint exercising what the wire does to values and errors."""

    target = oslo_messaging.Target(version='1.2')

    def __init__(self):
        self.received = []
        self.cast_done = threading.Event()

    @oslo_messaging.expose
    def echo(self, context, value, service=None):
        self.received.append(service)
        return {'value': value,
                'context_class': type(context).__name__,
                'user_id': context.user_id,
                'project_id': context.project_id,
                'service': service}

    @oslo_messaging.expose
    def missing_thing(self, context):
        raise exception.ResourceNotFound(resource='Thing', key='uuid',
                                         value='42')

    @oslo_messaging.expose
    def builtin_error(self, context):
        raise ValueError('bad value')

    @oslo_messaging.expose
    def foreign_error(self, context):
        raise NotAllowedRemotely('from elsewhere')

    @oslo_messaging.expose
    def lost_database(self, context):
        # No expected_exceptions: the server's dispatcher expects it.
        raise exception.DatabaseUnavailable(reason='OperationalError 2003')

    @oslo_messaging.expose
    def remember(self, context, value):
        self.received.append(value)
        self.cast_done.set()

    def not_exposed(self, context):
        return 'should not be reachable'


def make_service():
    service = objects.Service(host='node-9', binary='cyborg-agent',
                              topic='cyborg-agent', report_count=3)
    service.obj_reset_changes()
    return service


class TestLocalDispatchMatchesWire(base.TestCase):

    def setUp(self):
        super().setUp()
        self.messaging = self.useFixture(messaging.Messaging(conf.CONF))
        self.endpoint = Endpoint()
        self.messaging.serve(TOPIC, HOST, [self.endpoint])
        self.context = cyborg_context.RequestContext(
            user_id='user-a', project_id='project-b', roles=['member'])
        target = oslo_messaging.Target(topic=TOPIC, server=HOST,
                                       version='1.0')
        self.client = rpc.get_client(target, version_cap='1.2')

    def _wire_then_local(self, function):
        """Run ``function`` over fake:// and then through the local path."""
        wire = function()
        rpc.register_local_endpoint(TOPIC, HOST, self.endpoint)
        self.addCleanup(rpc.unregister_local_endpoint, TOPIC, HOST)
        local = function()
        return wire, local

    def _errors(self, method):
        def capture():
            try:
                self.client.call(self.context, method)
            except Exception as error:
                return error
            self.fail('%s raised nothing' % method)
        return self._wire_then_local(capture)

    def test_call_returns_the_same_result(self):
        wire, local = self._wire_then_local(
            lambda: self.client.call(self.context, 'echo',
                                     value=['a', 1], service=make_service()))

        self.assertEqual(wire.pop('service').as_dict(),
                         local.pop('service').as_dict())
        self.assertEqual(wire, local)
        # The context arrives as a RequestContext on both paths.
        self.assertEqual(['a', 1], local['value'])
        self.assertEqual('RequestContext', local['context_class'])
        self.assertEqual('user-a', local['user_id'])
        self.assertEqual('project-b', local['project_id'])

    def test_objects_arrive_as_copies_on_both_paths(self):
        sent = make_service()
        wire, local = self._wire_then_local(
            lambda: self.client.call(self.context, 'echo', value=1,
                                     service=sent))

        for result, received in zip((wire, local), self.endpoint.received,
                                    strict=True):
            self.assertIsInstance(received, objects.Service)
            self.assertIsNot(sent, received)
            self.assertEqual(sent.as_dict(), received.as_dict())
            self.assertIsInstance(result['service'], objects.Service)
            self.assertEqual(sent.as_dict(), result['service'].as_dict())

    def test_cyborg_exception_keeps_its_class(self):
        wire, local = self._errors('missing_thing')

        for error in (wire, local):
            self.assertIsInstance(error, exception.ResourceNotFound)
            self.assertEqual(404, error.code)
            self.assertEqual({'resource': 'Thing', 'key': 'uuid',
                              'value': '42'}, error.kwargs)
            self.assertIn('Thing not found with uuid=42', str(error))

    def test_builtin_exception_keeps_its_class(self):
        wire, local = self._errors('builtin_error')

        self.assertIsInstance(wire, ValueError)
        self.assertIsInstance(local, ValueError)

    # fake:// hands the endpoint's exception object to the caller, whereas a
    # real transport (and the local path) only rebuilds classes of allowed
    # modules: the others arrive as a RemoteError naming the class.
    # cyborg.tests.functional.services.test_rpc_wire compares with RabbitMQ.

    def test_other_exceptions_become_remote_errors(self):
        wire, local = self._errors('foreign_error')

        self.assertIsInstance(local, oslo_messaging.RemoteError)
        self.assertEqual(type(wire).__name__, local.exc_type)
        self.assertEqual(str(wire), local.value)

    def test_a_lost_database_keeps_its_class_and_no_traceback(self):
        log = self.useFixture(fixtures.FakeLogger(
            name='oslo_messaging.rpc.server', level=logging.INFO))
        wire, local = self._errors('lost_database')

        for error in (wire, local):
            self.assertIsInstance(error, exception.DatabaseUnavailable)
            self.assertEqual(503, error.code)
        self.assertNotIn('Exception during message handling', log.output)
        self.assertNotIn('Traceback', log.output)

    def test_unexposed_method_is_refused_on_both_paths(self):
        wire, local = self._errors('not_exposed')

        self.assertIsInstance(wire, oslo_messaging.NoSuchMethod)
        self.assertIsInstance(local, oslo_messaging.RemoteError)
        self.assertEqual('NoSuchMethod', local.exc_type)

    def test_newer_version_than_endpoint_is_refused_on_both_paths(self):
        client = self.client.prepare(version='2.0', version_cap=None)

        def capture():
            try:
                client.call(self.context, 'echo', value=1)
            except Exception as error:
                return error
            self.fail('a 2.0 message was accepted by a 1.2 endpoint')

        wire, local = self._wire_then_local(capture)
        self.assertIsInstance(wire, oslo_messaging.UnsupportedVersion)
        self.assertIsInstance(local, oslo_messaging.RemoteError)
        self.assertEqual('UnsupportedVersion', local.exc_type)

    def test_version_cap_is_enforced_before_dispatch(self):
        rpc.register_local_endpoint(TOPIC, HOST, self.endpoint)
        self.addCleanup(rpc.unregister_local_endpoint, TOPIC, HOST)
        client = self.client.prepare(version='1.3')

        self.assertFalse(client.can_send_version('1.3'))
        self.assertTrue(client.can_send_version('1.2'))
        self.assertRaises(oslo_messaging.RPCVersionCapError, client.call,
                          self.context, 'echo', value=1)
        self.assertEqual([], self.endpoint.received)


class TestLocalDispatch(base.TestCase):

    def setUp(self):
        super().setUp()
        # No server listens: only the local path can answer.
        self.useFixture(messaging.Messaging(conf.CONF))
        self.endpoint = Endpoint()
        self.context = cyborg_context.get_admin_context()

    def test_local_endpoint_answers_without_any_server(self):
        rpc.register_local_endpoint(TOPIC, HOST, self.endpoint)
        client = rpc.get_client(oslo_messaging.Target(topic=TOPIC,
                                                      server=HOST))

        result = client.call(self.context, 'echo', value='hi')

        self.assertEqual('hi', result['value'])

    def test_topic_without_server_reaches_any_local_endpoint(self):
        rpc.register_local_endpoint(TOPIC, HOST, self.endpoint)
        client = rpc.get_client(oslo_messaging.Target(topic=TOPIC))

        self.assertEqual('hi', client.call(self.context, 'echo',
                                           value='hi')['value'])

    def test_other_server_goes_over_the_transport(self):
        self.flags(rpc_response_timeout=1)
        rpc.register_local_endpoint(TOPIC, HOST, self.endpoint)
        client = rpc.get_client(oslo_messaging.Target(topic=TOPIC,
                                                      server='host-2'))

        self.assertRaises(oslo_messaging.MessagingTimeout, client.call,
                          self.context, 'echo', value='hi')
        self.assertEqual([], self.endpoint.received)

    def test_local_cast_runs_the_endpoint(self):
        rpc.register_local_endpoint(TOPIC, HOST, self.endpoint)
        client = rpc.get_client(oslo_messaging.Target(topic=TOPIC,
                                                      server=HOST))

        self.assertIsNone(client.cast(self.context, 'remember', value=7))

        self.assertTrue(self.endpoint.cast_done.wait(5))
        self.assertEqual([7], self.endpoint.received)

    def test_cleanup_forgets_local_endpoints(self):
        rpc.register_local_endpoint(TOPIC, HOST, self.endpoint)
        rpc.cleanup()
        self.assertIsNone(rpc._local_endpoint_for(
            oslo_messaging.Target(topic=TOPIC, server=HOST)))

