"""What the services' Prometheus metrics share, served only when [metrics] enabled.

Whether the process measures at all, the registry a scrape reads
(prometheus_client's multiprocess mode when PROMETHEUS_MULTIPROC_DIR is
set), the HTTP server of the conductor and the agent, and the counting of
RPC errors. Each service's own metrics sit beside it (``api/metrics.py``,
``conductor/metrics.py``, ``agent/metrics.py``); nothing here reads the
configuration or imports them.
"""

import functools
import logging
import os
import time

import prometheus_client
from prometheus_client import multiprocess
from oslo_messaging.rpc import dispatcher

from cyborg.common import listening

LOG = logging.getLogger(__name__)

# prometheus_client reads it when it is imported: every process of a
# service writes its values to files there, and a scrape adds them up.
MULTIPROCESS_DIR_ENV = 'PROMETHEUS_MULTIPROC_DIR'

_enabled = False


def enable():
    """Start measuring in this process (the entry points call it)."""
    global _enabled
    _enabled = True


def disable():
    """Stop measuring in this process."""
    global _enabled
    _enabled = False


def is_enabled():
    """Whether this process measures: the observations cost nothing when off."""
    return _enabled


def is_multiprocess():
    """Whether prometheus_client writes values to PROMETHEUS_MULTIPROC_DIR."""
    return bool(os.environ.get(MULTIPROCESS_DIR_ENV))


def scrape_registry(registry, collectors=()):
    """The registry a scrape reads: ``registry`` or, in multiprocess mode,
    what every process wrote to PROMETHEUS_MULTIPROC_DIR; plus
    ``collectors`` (read at each scrape, in the serving process).
    """
    if is_multiprocess():
        registry = prometheus_client.CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    for collector in collectors:
        registry.register(collector)
    return registry


class _Combined:
    """The families of several registries as one collector. A name given
    already is left out: each registry has the same process's ``process_*``
    and ``python_*`` families, and a scrape may hold each name once."""

    def __init__(self, registries):
        self._registries = list(registries)

    def collect(self):
        seen = set()
        for registry in self._registries:
            for family in registry.collect():
                if family.name not in seen:
                    seen.add(family.name)
                    yield family

    def describe(self):
        # Nothing to check at registration: each registry checked its own.
        return []


def combined_registry(registries):
    """One registry serving the families of ``registries`` (the all-in-one's
    API, conductor and agent), each name once."""
    registry = prometheus_client.CollectorRegistry()
    registry.register(_Combined(registries))
    return registry


def process_registry():
    """A registry with the serving process's own CPU, memory and GC metrics."""
    registry = prometheus_client.CollectorRegistry()
    if not is_multiprocess():
        prometheus_client.ProcessCollector(registry=registry)
        prometheus_client.PlatformCollector(registry=registry)
        prometheus_client.GCCollector(registry=registry)
    return registry


def timed(histogram, outcome):
    """A decorator observing in ``histogram`` how long each call took,
    labelled ``outcome(result)`` when it returns and ``failed`` when it
    raises; nothing when metrics are off."""

    def decorator(function):
        @functools.wraps(function)
        def timing(*args, **kwargs):
            if not is_enabled():
                return function(*args, **kwargs)
            started = time.monotonic()
            label = 'failed'
            try:
                result = function(*args, **kwargs)
                label = outcome(result)
                return result
            finally:
                histogram.labels(label).observe(time.monotonic() - started)

        return timing

    return decorator


class Exporter:
    """Serves ``registry`` over HTTP on (host, port) in a thread of its own.

    The conductor and the agent start one with their RPC service; port 0
    takes a free port (``port`` says which once started).
    """

    def __init__(self, host, port, registry, name, option=None):
        """``option`` names the option of ``port``, for the message of a
        port that cannot be listened on."""
        self.host = host
        self.port = port
        self.registry = registry
        self.name = name
        self.option = option
        self._server = None
        self._thread = None

    def start(self):
        """Listen and serve until ``stop``; enable measuring in this process.

        :raises: cyborg.common.listening.ListenError when the port
            cannot be bound.
        """
        try:
            self._server, self._thread = prometheus_client.start_http_server(
                self.port, addr=self.host, registry=self.registry)
        except OSError as error:
            raise listening.ListenError(
                '%s\'s metrics' % self.name, self.host, self.port,
                listening.failure_reason(error),
                self.option) from error
        enable()
        self.port = self._server.server_port
        LOG.info('%s serves Prometheus metrics on %s:%d', self.name,
                 self.host, self.port)

    def stop(self):
        """Stop serving and close the socket."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        self._server = self._thread = None


class CountingEndpoints:
    """``manager`` as an RPC endpoint, each exposed method's exceptions
    counted in ``errors`` (labels: method, error class).

    ``on_result`` maps method names to a function called with what that
    method returned. Everything else is the manager's: its ``target``, its
    periodic tasks, its methods that RPC does not reach.
    """

    def __init__(self, manager, errors, on_result=None):
        self._manager = manager
        self._errors = errors
        self._on_result = on_result or {}
        self._wrapped = {}

    def __getattr__(self, name):
        attribute = getattr(self._manager, name)
        if not getattr(attribute, 'exposed', False):
            return attribute
        if name not in self._wrapped:
            self._wrapped[name] = self._counting(name, attribute)
        return self._wrapped[name]

    def _counting(self, name, method):
        on_result = self._on_result.get(name)

        @functools.wraps(method)
        def counted(*args, **kwargs):
            try:
                result = method(*args, **kwargs)
            except dispatcher.ExpectedException as expected:
                # A domain exception, sent back to the caller as it is.
                self._errors.labels(name, type(expected.exc_info[1]).__name__
                                    ).inc()
                raise
            except Exception as error:
                self._errors.labels(name, type(error).__name__).inc()
                raise
            if on_result is not None:
                on_result(result)
            return result

        return counted
