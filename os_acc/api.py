"""os-acc's calls: configure, initialize, plug and unplug.

Each call is one RPC call to cyborg-conductor (``ConductorAPI``). The
calls are thread-safe: a compute driver may run them
from a ``ThreadPoolExecutor``. The calls act as the
compute node's Cyborg service (an admin context with a service token,
in the instance's project); the node's identity is ``[DEFAULT] host``,
the host its agent reports as.
"""

import logging
import threading
import time

import oslo_messaging

from cyborg import conf as cyborg_conf
from cyborg import context as cyborg_context
from cyborg import exception as cyborg_exception
from cyborg import objects
from cyborg import rpc
from cyborg.conductor import rpcapi as conductor_rpcapi
from os_acc import arguments
from os_acc import attachments
from os_acc import exception

LOG = logging.getLogger(__name__)

CONF = cyborg_conf.CONF
# How long initialize() waits for the agent, by default (seconds).
INITIALIZE_TIMEOUT = 120
# plug waits this much longer than [conductor] bind_timeout, so that the
# conductor's own answer (a bind that timed out) arrives first.
PLUG_ANSWER_MARGIN = 30
# initialize asks the conductor to wait for a report this much less than
# the time left, to have its answer in time.
STATUS_ANSWER_MARGIN = 1
# After a conductor that could not be reached, initialize asks again after
# this many seconds, doubled each time up to RETRY_DELAY_MAX.
RETRY_DELAY = 0.5
RETRY_DELAY_MAX = 5
# Errors of a conductor of an older release without os-acc's calls.
OLDER_CONDUCTOR_ERRORS = ('UnsupportedVersion', 'NoSuchMethod')


class _State:
    """The process's os-acc client, made once, under ``lock``."""

    lock = threading.Lock()
    configured = False
    conductor = None
    version_cap = None


def configure(config_files=None):
    """Load cyborg's configuration and set up RPC to the conductor.

    ``config_files`` defaults to the usual lookup (``/etc/cyborg/cyborg.
    conf`` and the other places oslo.config looks). The first call that
    needs it configures implicitly, unless this process set up cyborg's RPC
    itself (a cyborg service, the all-in-one, tests): that one is used.
    """
    with _State.lock:
        _configure(config_files)


def _configure(config_files):
    CONF([], project='cyborg', default_config_files=config_files)
    objects.register_all()
    rpc.init(CONF)
    _State.configured = True
    _State.conductor = None


def _conductor():
    """The process's ConductorAPI, pinned as [upgrade_levels] says."""
    with _State.lock:
        if not _State.configured and rpc.TRANSPORT is None:
            _configure(None)
        objects.register_all()
        version_cap = CONF.upgrade_levels.conductor
        if _State.conductor is None or _State.version_cap != version_cap:
            _State.conductor = conductor_rpcapi.ConductorAPI(
                version_cap=version_cap)
            _State.version_cap = version_cap
        return _State.conductor


def _context(project_id=None):
    """The context of one call: the compute node's Cyborg service."""
    return cyborg_context.RequestContext(
        is_admin=True, roles=['admin', 'service'], project_id=project_id,
        has_service_token=True, overwrite=False)


def initialize(timeout=INITIALIZE_TIMEOUT):
    """Wait until this host's agent is ready: up, its devices reported and
    published to Placement. Returns None.

    The conductor answers at once when the host is ready, else once it has
    applied the host's next report (or after a few seconds); a conductor
    that cannot be reached is asked again after a short backoff.

    :raises: CyborgAgentUnavailable when the host is not ready, or the
        conductor does not answer, within ``timeout`` seconds
    """
    conductor = _conductor()
    host = CONF.host
    context = _context()
    deadline = time.monotonic() + timeout
    delay = RETRY_DELAY
    reason = 'no answer from cyborg-conductor'
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        wait = max(0, remaining - STATUS_ANSWER_MARGIN)
        try:
            status = conductor.host_status(context, host, wait=wait,
                                           timeout=max(1, remaining))
        except Exception as error:
            reason, final, refused = _unanswered(error)
            if final:
                break
            if refused:
                # Refused at once (no conductor listening, no bus): the
                # call did not wait, so this does, a little.
                time.sleep(min(delay, max(0, deadline - time.monotonic())))
                delay = min(2 * delay, RETRY_DELAY_MAX)
            continue
        if status.get('ready'):
            LOG.info('Cyborg agent of %s is ready (request %s)', host,
                     context.request_id)
            return None
        reason = status.get('reason') or 'not ready'
        if wait <= 0:
            break
    LOG.warning('Cyborg agent of %s unavailable after %s s (request %s): %s',
                host, timeout, context.request_id, reason)
    raise exception.CyborgAgentUnavailable(host, reason)


def _unanswered(error):
    """What a failed status call means to ``initialize``: ``(reason,
    final, refused)``, ``final`` when asking again changes nothing (a
    conductor too old, or a version cap), ``refused`` when the call failed
    at once rather than timing out.

    :raises: the translated ``error`` when it is not an unavailability
    """
    translated = _translated(error)
    if not isinstance(translated, exception.CyborgUnavailable):
        raise translated from error
    if isinstance(error, oslo_messaging.RPCVersionCapError) or \
            _is_older_conductor(error):
        return str(translated), True, False
    return ('cyborg-conductor did not answer: %s' % translated, False,
            not isinstance(error, oslo_messaging.MessagingTimeout))

def plug(instance_info, selected_rp, flavor_extra_specs):
    """Attach the accelerators the flavor asks for, on the selected
    resource provider of this host; return one dict per accelerator:
    ``{"pci_id": "dddd:bb:dd.f"}`` or ``{"mdev_uuid": "..."}``.

    Programs the bitstream the extra specs name first (``accel:
    bitstream_id``, or ``accel:function_id`` with the region's type).
    Idempotent: plugging an instance plugged to the same provider returns
    the same attachments.

    :raises: TypeError, ValueError (a malformed argument, naming the key);
        DeviceProfileNotFound; PlugFailed (nothing held afterwards);
        PlugConflict; CyborgUnavailable
    """
    instance = arguments.instance_info(instance_info)
    rp_uuid = arguments.selected_rp(selected_rp)
    request = arguments.accelerator_request(flavor_extra_specs)
    conductor = _conductor()
    context = _context(instance['project_id'])
    try:
        outcome = conductor.plug_instance(
            context, instance['uuid'], CONF.host, rp_uuid,
            device_profile_name=request.device_profile_name,
            groups=request.groups,
            timeout=CONF.conductor.bind_timeout + PLUG_ANSWER_MARGIN)
    except Exception as error:
        translated = _translated(error, request.device_profile_name)
        _log_failure('plug', instance, context, translated)
        raise translated from error
    try:
        plugged = _plugged(instance, outcome)
    except exception.OsAccError as error:
        _log_failure('plug', instance, context, error)
        raise
    LOG.info('Plugged %d accelerator(s) into instance %s (%s) on resource '
             'provider %s (request %s)', len(plugged), instance['uuid'],
             instance['name'], rp_uuid, context.request_id)
    return plugged


def _plugged(instance, outcome):
    """The attachments of the conductor's plug ``outcome``, or its error."""
    if 'attachments' in outcome:
        return attachments.attachments(outcome['attachments'])
    if outcome.get('busy'):
        raise exception.PlugConflict(
            'Instance %s is being plugged by another call right now'
            % instance['uuid'])
    raise exception.PlugFailed(instance['uuid'],
                               outcome.get('failed') or ['unknown'])


def unplug(instance_info):
    """Release the instance's accelerators; return how many were released
    (0 for an instance without any).

    :raises: TypeError, ValueError (a malformed argument, naming the key);
        CyborgUnavailable
    """
    instance = arguments.instance_info(instance_info)
    conductor = _conductor()
    context = _context(instance['project_id'])
    try:
        released = conductor.unplug_instance(context, instance['uuid'])
    except Exception as error:
        translated = _translated(error)
        _log_failure('unplug', instance, context, translated)
        raise translated from error
    LOG.info('Unplugged %d accelerator(s) of instance %s (%s) (request %s)',
             released, instance['uuid'], instance['name'],
             context.request_id)
    return released


def _log_failure(operation, instance, context, error):
    LOG.warning('os-acc %s of instance %s (%s) failed (request %s): %s: %s',
                operation, instance['uuid'], instance['name'],
                context.request_id, type(error).__name__, error)


def _message(error):
    """The text of ``error`` without the remote traceback oslo.messaging
    appends to the exceptions it rebuilds."""
    message = getattr(error, 'message', None)
    if isinstance(message, str) and message:
        return message
    return str(error).split('\n', 1)[0]


def _is_older_conductor(error):
    """Whether ``error`` is a conductor refusing os-acc's RPC version or
    methods (a conductor of an older release)."""
    return (isinstance(error, oslo_messaging.RPCDispatcherError)
            or (isinstance(error, oslo_messaging.RemoteError)
                and error.exc_type in OLDER_CONDUCTOR_ERRORS))


def _is_unreachable(error):
    """Whether ``error`` says Cyborg could not be reached or is too old."""
    return (isinstance(error, (cyborg_exception.ServiceUnavailable,
                               oslo_messaging.MessagingTimeout,
                               oslo_messaging.MessageDeliveryFailure,
                               oslo_messaging.RPCVersionCapError))
            or _is_older_conductor(error))


def _translated(error, device_profile_name=None):
    """``error`` of a conductor call as os-acc's exception."""
    if isinstance(error, (exception.OsAccError, TypeError, ValueError)):
        return error
    message = _message(error)
    if _is_older_conductor(error):
        return exception.CyborgUnavailable(
            'cyborg-conductor is of an older release without os-acc calls '
            '(%s); set [upgrade_levels] conductor or upgrade it' % message)
    if _is_unreachable(error):
        return exception.CyborgUnavailable(message)
    if isinstance(error, cyborg_exception.ResourceNotFound) and \
            device_profile_name is not None and \
            error.kwargs.get('resource') == 'DeviceProfile':
        return exception.DeviceProfileNotFound(device_profile_name)
    if isinstance(error, cyborg_exception.Invalid):
        return ValueError(message)
    if isinstance(error, cyborg_exception.Conflict):
        return exception.PlugConflict(message)
    if isinstance(error, oslo_messaging.MessagingException):
        return exception.CyborgUnavailable(message)
    return exception.OsAccError('%s: %s' % (type(error).__name__, message))
