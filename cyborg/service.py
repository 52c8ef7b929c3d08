"""Start, stop and heartbeat shared by cyborg-conductor and cyborg-agent.

Both run on oslo.service's threading backend: ``launch`` forks the worker
process(es) through cotyledon, SIGTERM reaches ``RPCService.stop`` there.
"""

import gc
import logging
import threading

import oslo_messaging
from oslo_log import log
from oslo_service import backend
from oslo_service import loopingcall
from oslo_service import service

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import metrics
from cyborg import objects
from cyborg import rpc
from cyborg.conf import upstream as upstream_conf
from cyborg.db import api as db_api

LOG = logging.getLogger(__name__)

if backend.get_backend_type() is not backend.BackendType.THREADING:
    # Without eventlet's monkey patching its loops and servers never run.
    raise ImportError('cyborg services need oslo.service\'s threading backend '
                      'but %s was selected before cyborg was imported'
                      % backend.get_backend_type())


class RPCService(service.ServiceBase):
    """Serves ``manager`` on (topic, host) and calls ``heartbeat`` periodically.

    ``heartbeat(context)`` runs right after start and then every [DEFAULT]
    report_interval seconds; a failing heartbeat is logged and retried at the
    next interval. A manager with ``start_periodic_tasks()`` and
    ``stop_periodic_tasks()`` (the agent's inventory report) has them called
    once its RPC server is up and before that server stops. An
    ``exporter`` (``cyborg.metrics.Exporter``) serves the process's metrics
    from start to stop. With ``database_check`` (a ``DatabaseGate``'s
    check, the conductor's) the RPC server stops consuming while the
    database is out and consumes again once the check answers.
    """

    def __init__(self, manager, topic, host, heartbeat, exporter=None,
                 database_check=None):
        self.manager = manager
        self.topic = topic
        self.host = host
        self.heartbeat = heartbeat
        self.exporter = exporter
        self._server = None
        self._server_lock = threading.Lock()
        self._heartbeat_loop = None
        self._stopped = threading.Event()
        self._gate = None
        if database_check is not None:
            self._gate = DatabaseGate(database_check, self._pause_server,
                                      self._resume_server)

    def start(self):
        """Start the RPC server and the heartbeat loop."""
        self._stopped.clear()
        if self.exporter is not None:
            self.exporter.start()
        self._resume_server()
        self._start_heartbeat()
        if hasattr(self.manager, 'start_periodic_tasks'):
            self.manager.start_periodic_tasks()
        if self._gate is not None:
            self._gate.start(conf.CONF.report_interval)
        LOG.info('%s started on host %s', self.topic, self.host)

    def stop(self, graceful=True):
        """Stop the periodic tasks and heartbeat, then let the RPC server finish."""
        if self._gate is not None:
            self._gate.stop()
        if hasattr(self.manager, 'stop_periodic_tasks'):
            self.manager.stop_periodic_tasks()
        self._stop_heartbeat()
        self._pause_server()
        if self.exporter is not None:
            self.exporter.stop()
        self._stopped.set()
        LOG.info('%s on host %s stopped', self.topic, self.host)

    def wait(self):
        """Block until ``stop`` has finished."""
        self._stopped.wait()

    @property
    def consuming(self):
        """Whether the RPC server takes requests."""
        return self._server is not None

    def _resume_server(self):
        """Start consuming the topic (a new RPC server), unless it does."""
        with self._server_lock:
            if self._server is None:
                target = oslo_messaging.Target(topic=self.topic,
                                               server=self.host)
                server = rpc.get_server(target, [self.manager])
                server.start()
                self._server = server

    def _pause_server(self):
        """Stop consuming; the requests under way finish first."""
        with self._server_lock:
            server, self._server = self._server, None
            if server is not None:
                server.stop()
                server.wait()

    def reset(self):
        """Restart the heartbeat loop so a changed report_interval applies."""
        if self._heartbeat_loop is not None:
            self._stop_heartbeat()
            self._start_heartbeat()

    def _start_heartbeat(self):
        self._heartbeat_loop = loopingcall.FixedIntervalLoopingCall(
            self._send_heartbeat)
        self._heartbeat_loop.start(interval=conf.CONF.report_interval)

    def _stop_heartbeat(self):
        if self._heartbeat_loop is not None:
            self._heartbeat_loop.stop()
            self._heartbeat_loop.wait()
            self._heartbeat_loop = None

    def _send_heartbeat(self):
        lost = None
        try:
            self.heartbeat(cyborg_context.get_admin_context())
        except exception.DatabaseUnavailable as error:
            lost = error
        except Exception as error:
            # The next interval tries again; a service stays up meanwhile.
            LOG.warning('Heartbeat of %s on %s failed: %s',
                        self.topic, self.host, error)
        else:
            db_api.OUTAGE.answered()
        if lost is not None:
            # Logged once per outage: here when the conductor said so (an
            # agent's), in cyborg.db.api when this process's transaction
            # failed (counted once all the same).
            db_api.OUTAGE.failed(lost)


class DatabaseGate:
    """While the database is out, a service takes no RPC request.

    A conductor that cannot reach its database would answer every request
    503 while the others could serve them: it stops consuming its topic
    (``pause``) when a check fails and consumes again (``resume``) when a
    check answers. ``check(context)`` (a cheap read, ``SELECT 1``) runs
    in a thread of its own every ``interval`` seconds, and at once when
    any transaction of this process starts an outage
    (``cyborg.db.api.OUTAGE``): never on a request's path.
    """

    def __init__(self, check, pause, resume):
        self._check = check
        self._pause = pause
        self._resume = resume
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = None
        self.paused = False

    def start(self, interval):
        """Check every ``interval`` seconds from now on."""
        self._stop.clear()
        self._outage = db_api.OUTAGE
        self._outage.listen(self._heard)
        self._thread = threading.Thread(target=self._run, args=(interval,),
                                        name='database-gate', daemon=True)
        self._thread.start()

    def stop(self):
        """Stop checking (the caller stops the server)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(30)
            self._thread = None
            self._outage.unlisten(self._heard)

    def _heard(self, started):
        if started:
            self._wake.set()

    def _run(self, interval):
        while not self._stop.is_set():
            self._wake.wait(interval)
            self._wake.clear()
            if not self._stop.is_set():
                self.check_once()

    def check_once(self):
        """Check the database; pause or resume on the answer. Returns
        whether it answered."""
        try:
            self._check(cyborg_context.get_admin_context())
        except exception.DatabaseUnavailable:
            answered = False  # Logged once by cyborg.db.api.OUTAGE.
        except Exception:
            LOG.exception('The database check failed')
            return False
        else:
            answered = True
        if answered == self.paused:
            self.paused = not answered
            if answered:
                self._resume()
                LOG.info('The database answers: taking RPC requests again')
            else:
                # Logged once it is so: the server has stopped consuming.
                self._pause()
                LOG.info('The database is out: no RPC request is taken '
                         'until it answers; other services take them')
        return answered


# Allocations between young collections (Python's default is 700): a
# 1,000-row list answer allocates tens of thousands of objects, and each
# collection on the way costs time in proportion to what it scans.
GC_YOUNG_THRESHOLD = 20000


def settle_heap():
    """Once a service has loaded everything it needs: freeze what is in
    memory out of the garbage collector's sight and collect young objects
    less often.

    What a process loaded at start (modules, the configuration, the
    application, SQLAlchemy's tables) lives as long as it does, yet every
    full collection scanned it again: on a 1,000-row list that was up to
    half of the CPU of the request. A forked worker also keeps sharing the
    frozen pages with its parent.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])


def prepare_service(argv):
    """Parse the command line and config files, set up logging, objects and RPC.

    Options of the files that no option here reads (some of OpenStack
    Cyborg's, in a carried-over cyborg.conf) are logged in one warning.
    """
    log.register_options(conf.CONF)
    conf.CONF(argv[1:], project='cyborg')
    log.setup(conf.CONF, 'cyborg')
    upstream_conf.warn_unknown_options(conf.CONF)
    objects.register_all()
    rpc.init(conf.CONF)


def run(rpc_service, binary, workers=1, exporter=None):
    """Run ``rpc_service`` until SIGTERM; return the process exit code.

    ``exporter`` serves the metrics: from the worker process, or from this
    one in prometheus_client's multiprocess mode (PROMETHEUS_MULTIPROC_DIR),
    where it adds up what every worker wrote. Several workers without that
    mode cannot share the port: refused (exit code 1).
    """
    if exporter is not None and not metrics.is_multiprocess():
        if workers > 1:
            LOG.error('%s cannot serve metrics from %d worker processes '
                      'without PROMETHEUS_MULTIPROC_DIR (see the metrics '
                      'guide)', binary, workers)
            return 1
        rpc_service.exporter = exporter
        exporter = None
    if exporter is not None:
        exporter.start()
    settle_heap()
    launcher = service.launch(conf.CONF, rpc_service, workers=workers,
                              restart_method='mutate')
    exit_code = launcher.wait()
    if exporter is not None:
        exporter.stop()
    rpc.cleanup()
    LOG.info('%s stopped', binary)
    return exit_code or 0
