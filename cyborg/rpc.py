"""oslo.messaging plumbing: the transport, the serializer, client and server factories.

Clients made here also know a shortcut: when the endpoint they address was
registered in this process with ``register_local_endpoint`` (the all-in-one
does so), a call runs the endpoint directly, with the same serialization and
the same exceptions as the wire, instead of paying a transport round trip.

A call over the transport gives up when the broker cannot be reached after
``CALL_RETRIES`` reconnections, or at once when no server listens on its
topic, and a call nobody answered in time says so too: the exceptions are
both oslo.messaging's and a ``ServiceUnavailable`` (503 at the API). RPC
servers keep reconnecting for as long as the broker is away and subscribe
again when it is back.
"""

import logging
import sys
import threading

from kombu import exceptions as kombu_exceptions
import oslo_messaging
from oslo_messaging._drivers import common as messaging_common
from oslo_messaging import _utils as messaging_utils
from oslo_messaging.rpc import dispatcher
from oslo_messaging.rpc import server as rpc_server
from oslo_serialization import jsonutils

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg.objects import base as objects_base

LOG = logging.getLogger(__name__)

# Exceptions from these modules re-raise on the caller's side with their class:
# the domain exceptions, a bitstream's metadata, programming's own and this
# module's (a conductor that cannot reach an agent: 503 at the API).
ALLOWED_EXMODS = ['cyborg.exception', 'cyborg.bitstream',
                  'cyborg.conductor.programming', 'cyborg.rpc']

# Endpoints must opt in with @oslo_messaging.expose, on the wire and locally.
ACCESS_POLICY = dispatcher.ExplicitRPCAccessPolicy

# oslo.messaging reconnects forever before it sends a call, and the call's
# timeout only starts once the message is out: with the broker down a call
# (an API request, an agent's report) would wait as long as the outage. Two
# reconnections take about 8 s with the default [oslo_messaging_rabbit]
# rabbit_retry_interval, rabbit_retry_backoff and kombu_reconnect_delay.
CALL_RETRIES = 2
# Calls are published "mandatory": when no queue takes them (its server is
# down, or reconnecting after a broker restart: queues are not durable) the
# broker hands them back at once, instead of the caller waiting for its
# timeout on a message nobody will read.
CALL_TRANSPORT_OPTIONS = oslo_messaging.TransportOptions(at_least_once=True)

TRANSPORT = None

_LOCAL_ENDPOINTS = {}
_LOCAL_ENDPOINTS_LOCK = threading.Lock()
_MESSAGING_CLIENTS_LOCK = threading.Lock()


def init(conf):
    """Create this process's RPC transport from ``conf``."""
    global TRANSPORT
    oslo_messaging.set_transport_defaults(control_exchange='cyborg')
    TRANSPORT = get_transport(conf)
    # oslo.messaging registers its client options ([DEFAULT]
    # rpc_response_timeout) when the first client is made; make one now so
    # that they can be read even when every call is dispatched locally.
    oslo_messaging.get_rpc_client(TRANSPORT, oslo_messaging.Target())


def cleanup():
    """Release the transport and forget every local endpoint."""
    global TRANSPORT
    if TRANSPORT is not None:
        TRANSPORT.cleanup()
    TRANSPORT = None
    with _LOCAL_ENDPOINTS_LOCK:
        _LOCAL_ENDPOINTS.clear()


def get_transport(conf):
    """A new RPC transport for ``conf``'s transport_url."""
    return oslo_messaging.get_rpc_transport(
        conf, allowed_remote_exmods=ALLOWED_EXMODS)


class MessageBusUnavailable(exception.ServiceUnavailable,
                            oslo_messaging.MessageDeliveryFailure):
    """A call could not be sent: the broker is unreachable.

    The API answers 503; callers of oslo.messaging's exceptions (the binder
    retries a bind on any MessagingException) still catch it.
    """

    msg_fmt = 'Service unavailable: the message bus cannot be reached.'


class ServerNotListening(exception.ServiceUnavailable,
                         oslo_messaging.MessageDeliveryFailure):
    """A call found no queue on its topic: the server is down or has not
    subscribed again since the broker came back."""

    msg_fmt = ('Service unavailable: no %(topic)s is listening; it is down '
               'or reconnecting to the message bus.')


class MessagingTimeout(exception.ServiceUnavailable,
                       oslo_messaging.MessagingTimeout):
    """A call went unanswered for its timeout: the server is away or busy,
    or the call was lost in a broker restart.

    Still an ``oslo_messaging.MessagingTimeout`` for the callers that tell a
    slow peer from other failures; a 503 at the API.
    """

    msg_fmt = ('Service unavailable: %(topic)s did not answer in time; '
               'whether the request was carried out is unknown.')


# The context key naming the caller's object versions.
OBJECT_VERSIONS_KEY = 'cyborg_object_versions'


class RequestContextSerializer(oslo_messaging.Serializer):
    """Sends the RequestContext as a dict and entities through ``base``."""

    def __init__(self, base):
        self._base = base

    def serialize_entity(self, context, entity):
        return self._base.serialize_entity(context, entity)

    def deserialize_entity(self, context, entity):
        return self._base.deserialize_entity(context, entity)

    def serialize_context(self, context):
        values = context.to_dict()
        # The object versions this caller reads: the server backports its
        # answer to them (objects_base.CyborgObjectSerializer). A service
        # of an older release ignores the key.
        values[OBJECT_VERSIONS_KEY] = objects_base.local_versions()
        return values

    def deserialize_context(self, context):
        values = dict(context)
        versions = values.pop(OBJECT_VERSIONS_KEY, None)
        request_context = cyborg_context.RequestContext.from_dict(values)
        request_context.peer_object_versions = (
            versions if isinstance(versions, dict) else None)
        return request_context


def get_serializer():
    """The serializer both ends of every cyborg RPC use."""
    return RequestContextSerializer(objects_base.CyborgObjectSerializer())


class Dispatcher(dispatcher.RPCDispatcher):
    """oslo.messaging's dispatcher, to which a lost database is expected.

    Whatever the endpoint, DatabaseUnavailable goes back to the caller with
    its class (503 at the API) and is not logged with a traceback by the
    server: ``cyborg.db.api.OUTAGE`` logs the outage once.
    """

    def dispatch(self, incoming):
        try:
            return super().dispatch(incoming)
        except exception.DatabaseUnavailable:
            raise dispatcher.ExpectedException() from None


def get_server(target, endpoints):
    """An RPC server (threading executor) for ``endpoints`` on ``target``."""
    return rpc_server.RPCServer(
        _require_transport(), target,
        Dispatcher(endpoints, get_serializer(), ACCESS_POLICY), None)


def get_client(target, version_cap=None):
    """A client for ``target`` that dispatches locally when it can."""
    return Client(target, version_cap)


def register_local_endpoint(topic, server, endpoint):
    """Let this process's clients reach ``endpoint`` on (topic, server) directly."""
    with _LOCAL_ENDPOINTS_LOCK:
        _LOCAL_ENDPOINTS[(topic, server)] = endpoint


def unregister_local_endpoint(topic, server):
    """Send calls to (topic, server) over the transport again."""
    with _LOCAL_ENDPOINTS_LOCK:
        _LOCAL_ENDPOINTS.pop((topic, server), None)


def _local_endpoint_for(target):
    """The endpoint registered for ``target``, or None to use the wire."""
    if target.fanout:
        # A fanout reaches every server, including those of other processes.
        return None
    with _LOCAL_ENDPOINTS_LOCK:
        if target.server is not None:
            return _LOCAL_ENDPOINTS.get((target.topic, target.server))
        for (topic, _server), endpoint in _LOCAL_ENDPOINTS.items():
            if topic == target.topic:
                return endpoint
    return None


def _require_transport():
    if TRANSPORT is None:
        raise RuntimeError('cyborg.rpc.init(conf) has not been called')
    return TRANSPORT


class Client:
    """The subset of oslo_messaging.RPCClient cyborg uses: prepare, call, cast.

    ``prepare`` returns another Client, so call sites read the same as with
    oslo.messaging: ``client.prepare(version='1.1').call(context, ...)``.
    A local call runs in the caller's thread: ``timeout`` and ``retry``
    apply to the transport only.
    """

    def __init__(self, target, version_cap=None, options=None, shared=None):
        self.target = target
        self.version_cap = version_cap
        self._options = dict(options or {})
        self._serializer = get_serializer()
        # One oslo.messaging client for this client and those it prepares,
        # rebuilt when rpc.init has made a new transport.
        self._shared = shared if shared is not None else {}

    def prepare(self, **overrides):
        """A client with some of the target fields or call options changed."""
        target_fields = {key: overrides.pop(key) for key in list(overrides)
                         if key in ('exchange', 'topic', 'namespace',
                                    'version', 'server', 'fanout')}
        version_cap = overrides.pop('version_cap', self.version_cap)
        options = dict(self._options, **overrides)
        return Client(self.target(**target_fields), version_cap, options,
                      self._shared)

    def can_send_version(self, version):
        """Whether the version cap allows messages of ``version``."""
        return (self.version_cap is None or
                messaging_utils.version_is_compatible(self.version_cap,
                                                      version))

    def call(self, context, method, **kwargs):
        """Invoke ``method`` on the target and return its result."""
        self._check_version_cap()
        endpoint = _local_endpoint_for(self.target)
        if endpoint is None:
            return self._call_over_transport(context, method, kwargs)
        return self._dispatch_locally(endpoint, context, method, kwargs)

    def cast(self, context, method, **kwargs):
        """Invoke ``method`` on the target without waiting for it."""
        self._check_version_cap()
        endpoint = _local_endpoint_for(self.target)
        if endpoint is None:
            self._messaging_call_context().cast(context, method, **kwargs)
            return
        thread = threading.Thread(
            target=self._cast_locally, name='cyborg-local-cast-%s' % method,
            args=(endpoint, context, method, kwargs), daemon=True)
        thread.start()

    def _call_over_transport(self, context, method, kwargs):
        call_context = self._messaging_call_context(
            retry=CALL_RETRIES, transport_options=CALL_TRANSPORT_OPTIONS)
        try:
            return call_context.call(context, method, **kwargs)
        except exception.ServiceUnavailable:
            # The server's own (this module's classes cross RPC): it could
            # not reach another service; the message says which.
            raise
        except oslo_messaging.MessageUndeliverable as error:
            raise ServerNotListening(topic=self.target.topic) from error
        except (oslo_messaging.MessageDeliveryFailure,
                kombu_exceptions.OperationalError) as error:
            # oslo.messaging has logged the broker's address and the error.
            # A call that needed a new connection gets kombu's own error
            # when the retries run out: the rabbit driver does not wrap it.
            raise MessageBusUnavailable() from error
        except oslo_messaging.MessagingTimeout as error:
            raise MessagingTimeout(topic=self.target.topic) from error

    def _check_version_cap(self):
        version = self.target.version
        if version is not None and not self.can_send_version(version):
            raise oslo_messaging.RPCVersionCapError(
                version=version, version_cap=self.version_cap)

    def _messaging_call_context(self, **defaults):
        """oslo.messaging's call context for the target; ``defaults`` are
        call options that prepare() did not set."""
        transport = _require_transport()
        with _MESSAGING_CLIENTS_LOCK:
            if self._shared.get('transport') is not transport:
                self._shared['client'] = oslo_messaging.get_rpc_client(
                    transport, oslo_messaging.Target(),
                    serializer=self._serializer)
                self._shared['transport'] = transport
            messaging_client = self._shared['client']
        target = self.target
        return messaging_client.prepare(
            exchange=target.exchange, topic=target.topic,
            namespace=target.namespace, version=target.version,
            server=target.server, fanout=target.fanout,
            version_cap=self.version_cap, **dict(defaults, **self._options))

    def _cast_locally(self, endpoint, context, method, kwargs):
        try:
            self._dispatch_locally(endpoint, context, method, kwargs)
        except Exception:
            LOG.exception('Local cast of %s failed', method)

    def _dispatch_locally(self, endpoint, context, method, kwargs):
        """Run ``method`` on ``endpoint`` as an RPC server would."""
        serializer = self._serializer
        # What the server sees went through the serializer and JSON, as on the
        # wire, so objects arrive as copies and dicts with string keys.
        server_context = serializer.deserialize_context(
            _through_json(serializer.serialize_context(context)))
        server_kwargs = {
            name: serializer.deserialize_entity(
                server_context,
                _through_json(serializer.serialize_entity(context, value)))
            for name, value in kwargs.items()}
        try:
            function = self._endpoint_method(endpoint, method)
            result = function(server_context, **server_kwargs)
            primitive = _through_json(
                serializer.serialize_entity(server_context, result))
        except Exception as error:
            # The wire's own conversion: allowed modules keep their class,
            # anything else becomes oslo_messaging.RemoteError. As the RPC
            # server does, an endpoint's expected_exceptions wrapper is
            # unwrapped to the exception it carries.
            exc_info = sys.exc_info()
            if isinstance(error, dispatcher.ExpectedException):
                exc_info = error.exc_info
            failure = messaging_common.serialize_remote_exception(exc_info)
            raise messaging_common.deserialize_remote_exception(
                failure, ALLOWED_EXMODS) from None
        return serializer.deserialize_entity(context, primitive)

    def _endpoint_method(self, endpoint, method):
        target = getattr(endpoint, 'target', None) or oslo_messaging.Target()
        version = self.target.version or '1.0'
        if self.target.namespace not in target.accepted_namespaces:
            raise dispatcher.UnsupportedVersion(version, method=method)
        if not messaging_utils.version_is_compatible(
                target.version or '1.0', version):
            raise dispatcher.UnsupportedVersion(version, method=method)
        if not (hasattr(endpoint, method) and
                ACCESS_POLICY().is_allowed(endpoint, method)):
            raise dispatcher.NoSuchMethod(method)
        return getattr(endpoint, method)


def _through_json(primitive):
    return jsonutils.loads(jsonutils.dumps(primitive))
