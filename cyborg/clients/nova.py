"""Cyborg's Nova client: tells Nova that accelerator requests are resolved.

Nova waits for one ``accelerator-request-bound`` server external event per
ARQ of a server it boots, tagged with the ARQ's uuid and ``completed`` or
``failed`` as its bind ended. Nova hands an event to the compute host of
its server; an event of a server it does not know, or of one no host has
taken yet, is not delivered, and nothing is lost by that: a compute that
takes the server later reads the resolved ARQs itself.

The client is openstacksdk's compute proxy, made once per process from the
[nova] group (auth, session and adapter options) of the configuration its
caller hands in, when the first events are sent, so the token its auth
plugin gets is reused for every later event until it expires, instead of
logging in to Keystone for each bind.
"""

import http
import logging
import threading

import openstack
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading

LOG = logging.getLogger(__name__)

GROUP = 'nova'
# The microversion Nova's own accelerator code expects for these events.
MICROVERSION = '2.82'
EVENT_NAME = 'accelerator-request-bound'
EVENTS_URL = '/os-server-external-events'
# The per-event codes of a 207 answer (Nova's os-server-external-events):
# taken, no such server, the server has no host yet (Nova cannot route the
# event to a compute). Any other code is a refusal.
EVENT_TAKEN = http.HTTPStatus.OK
NO_SUCH_SERVER = http.HTTPStatus.NOT_FOUND
NO_HOST_YET = http.HTTPStatus.UNPROCESSABLE_ENTITY
# The error key of Nova's own 404 body: Nova answers the whole request 404
# when it took none of its events (each of them was a 404 or a 422).
NOVA_NOT_FOUND_KEY = 'itemNotFound'
# Seconds an events request may take when [nova] timeout is not set: a
# binder thread waits for the answer, so it must not wait forever for a
# Nova that accepted the connection and never answers.
DEFAULT_TIMEOUT = 10

_CLIENT = None
_CLIENT_LOCK = threading.Lock()


def get_client(conf):
    """The process's NovaClient, made from ``conf`` on first use.

    Every caller of a process shares it, and so shares its session and
    token: the ``conf`` of later calls is not read.
    """
    global _CLIENT
    with _CLIENT_LOCK:
        if _CLIENT is None:
            _CLIENT = NovaClient(conf)
        return _CLIENT


def reset_client():
    """Forget the process's NovaClient (the next get_client makes a new one)."""
    global _CLIENT
    with _CLIENT_LOCK:
        _CLIENT = None


def arq_event(instance_uuid, arq_uuid, bound):
    """The server external event telling Nova how the bind of an ARQ ended."""
    return {'name': EVENT_NAME, 'server_uuid': instance_uuid,
            'tag': arq_uuid, 'status': 'completed' if bound else 'failed'}


def _load_proxy(conf):
    """openstacksdk's compute proxy (a keystoneauth Adapter) for [nova]."""
    auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
    session = ks_loading.load_session_from_conf_options(conf, GROUP,
                                                        auth=auth)
    # openstacksdk reads the adapter options (endpoint_override,
    # region_name, valid_interfaces, ...) from the group named after the
    # compute service's project: [nova].
    connection = openstack.connection.Connection(
        session=session, oslo_conf=conf, app_name='cyborg')
    return connection.compute


class NovaClient:
    """Server external events of cyborg, sent to Nova's compute API.

    ``conf`` is the configuration whose [nova] group it uses. Without
    [nova] auth_type the client is not configured: events are logged (once
    at WARNING, then at DEBUG) and dropped.
    """

    def __init__(self, conf, adapter=None):
        self._conf = conf
        self._adapter = adapter
        self._configured = (adapter is not None
                            or bool(self._conf[GROUP].auth_type))
        self._warned = False
        self._lock = threading.Lock()

    def is_configured(self):
        """Whether events can be sent at all."""
        return self._configured

    def _proxy(self):
        # Made on first use: openstacksdk logs in when it is made.
        with self._lock:
            if self._adapter is None:
                self._adapter = _load_proxy(self._conf)
            return self._adapter

    def reach(self, timeout):
        """None when Nova's compute API answers its root document within
        ``timeout`` seconds, else what went wrong."""
        try:
            response = self._proxy().get('/', raise_exc=False,
                                         timeout=timeout)
        except Exception as error:
            return '%s: %s' % (type(error).__name__, error)
        if response.status_code >= 500:
            return 'it answered %d' % response.status_code
        return None

    def send_events(self, events):
        """POST ``events`` to Nova in one request; return whether Nova answered
        them: took them, or said it has no such server or none on a host yet
        (nothing waits for those events then). Each is logged as answered.

        Failures are logged with the ARQ and server uuids, never raised: an
        ARQ's state does not depend on Nova hearing of it. The request
        gives up after [nova] timeout seconds (``DEFAULT_TIMEOUT`` unset).
        """
        if not events:
            return True
        if not self._configured:
            self._log_unconfigured(events)
            return False
        described = ', '.join('ARQ %s of server %s: %s' % (
            event['tag'], event['server_uuid'], event['status'])
            for event in events)
        timeout = self._conf[GROUP].timeout or DEFAULT_TIMEOUT
        try:
            response = self._proxy().post(
                EVENTS_URL, json={'events': events},
                microversion=MICROVERSION, raise_exc=False, timeout=timeout)
        except (ks_exceptions.ClientException,
                openstack.exceptions.SDKException) as error:
            LOG.error('Nova could not be told of %s: %s', described, error)
            return False
        if response.status_code == http.HTTPStatus.OK:
            LOG.info('Told Nova of %s', described)
            return True
        if response.status_code == http.HTTPStatus.MULTI_STATUS:
            self._log_partial(response, events)
            return True
        if response.status_code == http.HTTPStatus.NOT_FOUND and \
                _is_nova_not_found(response):
            # Nova took none of them: each server was unknown or had no
            # host yet, and the answer does not say which. Nothing waits
            # for these: a compute that takes a server reads its resolved
            # ARQs itself.
            LOG.info('Nova took none of the events of %s: it has no such '
                     'server, or none on a compute host yet (Nova: %s)',
                     described, _nova_message(response))
            return True
        LOG.error('Nova refused the events of %s: HTTP %s: %s', described,
                  response.status_code, response.text[:500])
        return False

    def _log_unconfigured(self, events):
        with self._lock:
            first = not self._warned
            self._warned = True
        described = ', '.join('%s (server %s)' % (
            event['tag'], event['server_uuid']) for event in events)
        if first:
            LOG.warning('[nova] auth_type is not set: Nova is not told when '
                        'accelerator requests are bound (not sent: %s); '
                        'further events are dropped silently', described)
        else:
            LOG.debug('Nova is not configured; not sent: %s', described)

    def _log_partial(self, response, events):
        """Log the events of a 207 answer that Nova did not take."""
        try:
            answered = response.json()['events']
        except (ValueError, KeyError, TypeError):
            answered = []
        for event in answered:
            code = event.get('code')
            arq, server = event.get('tag'), event.get('server_uuid')
            if code == EVENT_TAKEN:
                LOG.info('Told Nova of ARQ %s of server %s: %s', arq, server,
                         event.get('status'))
            elif code == NO_SUCH_SERVER:
                LOG.info('Nova has no server %s: the event for ARQ %s is '
                         'dropped (nothing waits for it)', server, arq)
            elif code == NO_HOST_YET:
                LOG.info('Nova could not route the event for ARQ %s: server '
                         '%s is on no compute host yet (the compute that '
                         'takes it reads the resolved ARQs itself)',
                         arq, server)
            else:
                LOG.warning('Nova refused the event for ARQ %s of server %s: '
                            'code %s, status %s', arq, server, code,
                            event.get('status'))
        if not answered:
            LOG.warning('Nova answered 207 to %d event(s) without details',
                        len(events))


def _nova_body(response):
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _is_nova_not_found(response):
    """Whether a 404 is Nova's own answer to the events (not a wrong URL)."""
    body = _nova_body(response)
    return body is not None and isinstance(body.get(NOVA_NOT_FOUND_KEY),
                                           dict)


def _nova_message(response):
    fault = (_nova_body(response) or {}).get(NOVA_NOT_FOUND_KEY) or {}
    return fault.get('message') or 'no message'
