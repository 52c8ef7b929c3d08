"""cyborg-status: ``cyborg-status upgrade check`` says whether this node can run.

The checks use oslo.upgradecheck; exit code 0 means success, 1 warning,
2 failure, 255 an error while checking. They read this node's
configuration: the database (schema at head; ARQs stuck in BindStarted
past ``[conductor] bind_timeout``), the message broker of
``transport_url``, Placement (``[placement]``) and Nova (``[nova]``).
A service left unconfigured is a warning (the API and agent nodes do not
use Placement or Nova); configured but unreachable is a failure.
"""

import datetime
import sys
import urllib.parse

import kombu
import oslo_messaging
from oslo_upgradecheck import upgradecheck
from oslo_utils import timeutils

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg.clients import nova as nova_client
from cyborg.clients import placement as placement_client
from cyborg.db import api as db_api
from cyborg.db import migration
from cyborg.db.queries import arq_binding

Code = upgradecheck.Code
Result = upgradecheck.Result
# Seconds a reachability check waits for a broker, Placement or Nova.
REACH_TIMEOUT = 5
# Stuck ARQs named in the warning (the count is always given).
STUCK_SHOWN = 5


def check_database_schema(engine=None):
    """Whether the database schema is at this code's head revision."""
    try:
        if engine is None:
            _configured_database()
            engine = db_api.get_engine()
        current = migration.current_revision(engine)
    except Exception as error:
        return upgradecheck.Result(
            upgradecheck.Code.FAILURE,
            'Cannot read the database schema revision (%s: %s). Check '
            '[database] connection, then run "cyborg-dbsync upgrade".'
            % (type(error).__name__, error))
    head = migration.head_revision()
    if current == head:
        return upgradecheck.Result(upgradecheck.Code.SUCCESS,
                                   'The database schema is at %s.' % head)
    if current is None:
        return upgradecheck.Result(
            upgradecheck.Code.FAILURE,
            'The database has no cyborg schema; run "cyborg-dbsync upgrade".')
    return upgradecheck.Result(
        upgradecheck.Code.FAILURE,
        'The database schema is at %s but this code needs %s; run '
        '"cyborg-dbsync upgrade" (if the database is newer than this code, '
        'upgrade cyborg instead).' % (current, head))


def _configured_database():
    if not db_api.main_context_manager.is_started:
        db_api.configure(conf.CONF)


def _failure_text(error):
    return '%s: %s' % (type(error).__name__, error)


def check_stuck_binds(config, now=None):
    """Whether ARQs wait in BindStarted for longer than bind_timeout.

    A running conductor fails such binds at its next sweep; ARQs stuck
    longer mean no conductor runs (or sweeps).
    """
    try:
        _configured_database()
        cutoff = (now or timeutils.utcnow()) - datetime.timedelta(
            seconds=config.conductor.bind_timeout)
        stuck = arq_binding.binds_started_before(
            cyborg_context.get_admin_context(), cutoff)
    except Exception as error:
        return Result(Code.FAILURE, 'Cannot read the ARQs (%s).'
                      % _failure_text(error))
    if not stuck:
        return Result(Code.SUCCESS, 'No ARQ has been binding for longer '
                      'than [conductor] bind_timeout (%d s).'
                      % config.conductor.bind_timeout)
    shown = ', '.join(row['uuid'] for row in stuck[:STUCK_SHOWN])
    return Result(
        Code.WARNING,
        '%d ARQ(s) have been in BindStarted for longer than [conductor] '
        'bind_timeout (%d s): %s%s. Is a cyborg-conductor running?'
        % (len(stuck), config.conductor.bind_timeout, shown,
           ', ...' if len(stuck) > STUCK_SHOWN else ''))


def check_message_broker(config):
    """Whether each broker host of ``transport_url`` accepts a connection."""
    try:
        # Making a transport registers the messaging options (it connects
        # only when used).
        oslo_messaging.get_rpc_transport(config).cleanup()
        url = oslo_messaging.TransportURL.parse(config, config.transport_url)
    except Exception as error:
        return Result(Code.FAILURE, 'transport_url is not usable (%s).'
                      % _failure_text(error))
    if url.transport == 'fake':
        return Result(Code.SUCCESS, 'In-process messaging (fake://): '
                      'nothing to reach.')
    use_ssl = bool(config.oslo_messaging_rabbit.ssl)
    scheme = 'amqp' if (url.transport or 'rabbit') == 'rabbit' \
        else url.transport
    hosts = url.hosts or [oslo_messaging.TransportHost(
        hostname='localhost', port=5672, username='guest',
        password='guest')]  # noqa: S106 (RabbitMQ's own default account)
    failed = []
    for host in hosts:
        where = '%s:%s' % (host.hostname, host.port or 5672)
        credentials = ''
        if host.username:
            credentials = urllib.parse.quote(host.username, safe='')
            if host.password:
                credentials += ':' + urllib.parse.quote(host.password, safe='')
            credentials += '@'
        broker = '%s://%s%s/%s' % (scheme, credentials, where,
                                    urllib.parse.quote(url.virtual_host or '',
                                                       safe=''))
        try:
            with kombu.Connection(broker, ssl=use_ssl,
                                  connect_timeout=REACH_TIMEOUT) as connection:
                connection.ensure_connection(max_retries=1)
        except Exception as error:
            failed.append('%s (%s)' % (where, _failure_text(error)))
    if failed:
        return Result(Code.FAILURE, 'Cannot connect to the message broker '
                      'at %s. Check transport_url.' % ', '.join(failed))
    return Result(Code.SUCCESS, 'The message broker answers at %s.'
                  % ', '.join('%s:%s' % (host.hostname, host.port or 5672)
                              for host in hosts))


def check_placement(config, client=None):
    """Whether Placement answers with the [placement] options."""
    if client is None:
        if not config.placement.auth_type:
            return Result(Code.WARNING, '[placement] is not configured: a '
                          'cyborg-conductor on this node could not publish '
                          'devices.')
        try:
            client = placement_client.PlacementClient(config)
        except Exception as error:
            return Result(Code.FAILURE, 'Cannot use the [placement] options '
                          '(%s).' % _failure_text(error))
    if not client.is_reachable():
        return Result(Code.FAILURE, 'Placement does not answer with the '
                      '[placement] options; see the debug log (--debug).')
    return Result(Code.SUCCESS, 'Placement answers.')


def check_nova(config):
    """Whether Nova's compute API answers with the [nova] options."""
    if not config.nova.auth_type:
        return Result(Code.WARNING, '[nova] is not configured: a '
                      'cyborg-conductor on this node would not tell Nova '
                      'that binds ended.')
    problem = nova_client.NovaClient(config).reach(REACH_TIMEOUT)
    if problem:
        return Result(Code.FAILURE, 'Nova does not answer with the [nova] '
                      'options (%s).' % problem)
    return Result(Code.SUCCESS, 'Nova answers.')


class Checks(upgradecheck.UpgradeCommands):
    """cyborg's upgrade checks."""

    def _check_database_schema(self):
        return check_database_schema()

    def _check_stuck_binds(self):
        return check_stuck_binds(conf.CONF)

    def _check_message_broker(self):
        return check_message_broker(conf.CONF)

    def _check_placement(self):
        return check_placement(conf.CONF)

    def _check_nova(self):
        return check_nova(conf.CONF)

    _upgrade_checks = (
        ('Database schema', _check_database_schema),
        ('Binds in progress', _check_stuck_binds),
        ('Message broker', _check_message_broker),
        ('Placement', _check_placement),
        ('Nova', _check_nova),
    )


def main(argv=None):
    """Run ``upgrade check``; return its exit code."""
    argv = sys.argv[1:] if argv is None else argv
    return upgradecheck.main(conf.CONF, project='cyborg',
                             upgrade_command=Checks(), argv=argv)
