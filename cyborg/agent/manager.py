"""The agent's RPC endpoints, its drivers, its heartbeat and inventory reports.

The inventory report runs in a thread of its own: at start and every
[agent] report_interval seconds the agent sends the full inventory of all
its drivers to the conductor (``ConductorAPI.report_inventory``).
"""

import logging
import threading
import time

import oslo_messaging
from stevedore import named

from cyborg.common import vocabulary
from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg.agent import bitstream_cache
from cyborg.agent import preparing
from cyborg.agent import programming
from cyborg.agent import rpcapi
from cyborg.agent.drivers import base as drivers_base
from cyborg.clients import glance as glance_client
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db import api as db_api
from cyborg.agent import metrics as agent_metrics

LOG = logging.getLogger(__name__)

BINARY = 'cyborg-agent'
DRIVER_NAMESPACE = 'cyborg.accelerator.driver'
# How long stopping waits for a report under way before giving up on it.
REPORT_STOP_TIMEOUT = 10
# [agent] bitstream_cache_size is in MiB.
MIB = 1024 * 1024


class UnknownDriver(exception.CyborgException):
    msg_fmt = ('[agent] enabled_drivers names %(names)s, which no installed '
               'package provides (entry points of %(namespace)s).')


class DriverLoadFailed(exception.CyborgException):
    msg_fmt = 'Accelerator driver %(name)s failed to load: %(reason)s'


class DeployableCache:
    """The deployables each driver last discovered, by name, per driver.

    The report thread replaces a driver's entry while RPC threads read it:
    an entry is an index built once and never changed afterwards, swapped
    whole under a lock, so a reader sees one discovery or the next, never a
    mix of both.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._by_driver = {}

    def replace(self, driver_name, devices):
        """Keep ``devices`` (a discovery) as ``driver_name``'s; return its index.

        The index is ``{deployable name: (device, deployable)}`` over the
        whole device trees.
        """
        index = _index_deployables(devices)
        with self._lock:
            self._by_driver[driver_name] = index
        return index

    def forget(self, driver_name):
        """Drop ``driver_name``'s entry: its devices are unknown now."""
        with self._lock:
            self._by_driver.pop(driver_name, None)

    def get(self, driver_name):
        """The index of ``driver_name``'s last discovery, or None if none."""
        with self._lock:
            return self._by_driver.get(driver_name)


class AgentManager:
    """Endpoints of the cyborg-agent topic of one host, and its drivers.

    What each driver discovered for the last inventory report is kept in a
    ``DeployableCache``: the conductor binds ARQs to the deployables and
    attach handles of that report, so ``prepare_arqs`` looks the handle it
    is named up there and calls no driver's ``discover()`` in the usual
    case. A driver discovers again, once per ``prepare_arqs`` call, only
    when it has no entry yet (the agent has not collected an inventory
    since it started, or the driver's last discovery failed) or when its
    entry lacks the named handle (the host changed since the last report);
    that discovery replaces its entry. A driver whose discovery fails
    during a collection loses its entry, so that a bind asks it again
    rather than trusting what it saw before.
    """

    target = oslo_messaging.Target(version='1.4')

    def __init__(self, host=None, driver_names=None):
        """Load the drivers (default: [agent] enabled_drivers).

        :raises: UnknownDriver, DriverLoadFailed
        """
        self.host = host or conf.CONF.host
        if driver_names is None:
            driver_names = conf.CONF.agent.enabled_drivers
        self.drivers = load_drivers(driver_names)
        self.conductor = conductor_rpcapi.ConductorAPI(
            version_cap=conf.CONF.upgrade_levels.conductor)
        self.deployables = DeployableCache()
        # Downloads bitstreams with the agent's own [glance] credentials.
        self.glance = glance_client.GlanceClient(conf.CONF)
        self._bitstream_cache = None
        self._cache_lock = threading.Lock()
        self.preparer = preparing.Preparer(self)
        # Reports and programmings never overlap (see ReportGate).
        self.report_gate = programming.ReportGate()
        self._report_thread = None
        self._report_stop = None
        # Set to send the next inventory report now (after programming).
        self._report_wake = None

    @oslo_messaging.expose
    def ping(self, context):
        """Answer with this agent's host name."""
        return self.host

    @oslo_messaging.expose
    def prepare_arqs(self, context, arqs, timeout=None):
        """Prepare the attach handle of each ARQ with the driver that has it.

        See ``AgentAPI.prepare_arqs`` for ``arqs`` and the answer;
        ``cyborg.agent.preparing`` does it. Each handle is looked up in the
        cached inventory (see the class); a driver concerned discovers at
        most once for the whole call, and a handle it does not report even
        then, or a driver that fails, fails its ARQs only. An ARQ naming a
        ``bitstream_id`` has it downloaded and loaded by the driver's
        ``prepare`` first. The handles are prepared in parallel (those of a
        deployable being programmed one after the other); with ``timeout``
        (how long the caller waits) the answer comes a little before it,
        and an ARQ whose preparation is still running is then answered
        ``pending`` (the conductor asks again), so that one slow device
        does not take the others of the call down with it.
        """
        answer = self.preparer.prepare(
            arqs, timeout, conf.CONF.agent.max_bitstream_bytes)
        pending = sorted(uuid for uuid, result in answer.items()
                         if result.get('pending'))
        failed = sorted(uuid for uuid, result in answer.items()
                        if not result['prepared'] and uuid not in pending)
        LOG.info('Prepared %d attach handle(s) for ARQs%s%s',
                 len(answer) - len(failed) - len(pending),
                 '; failed: %s' % ', '.join(failed) if failed else '',
                 '; still preparing: %s' % ', '.join(pending)
                 if pending else '')
        return answer

    @oslo_messaging.expose
    def release_arqs(self, context, handles, timeout=None):
        """Have the drivers give back what they prepared for ``handles``.

        See ``AgentAPI.release_arqs``; ``cyborg.agent.preparing`` does it. A
        release older than the last prepare of its handle is ignored.
        """
        answer = self.preparer.release(handles, timeout)
        released = sum(1 for result in answer if result['released'])
        LOG.info('Released %d of %d attach handle(s)', released, len(answer))
        return answer

    @oslo_messaging.expose
    def program(self, context, driver_name, deployable_name, image_id):
        """Download a Glance bitstream and have a driver program it.

        See ``AgentAPI.program``; ``cyborg.agent.programming`` does it.
        """
        request = programming.ProgramRequest(driver_name, deployable_name,
                                             image_id)
        # Programming may take minutes: say when it starts, not only how
        # it ended.
        LOG.info('Programming %s (driver %s) with image %s: started',
                 deployable_name, driver_name, image_id)
        with self.report_gate.programming():
            result = programming.program(
                request, self.drivers, self.deployables, self.glance,
                conf.CONF.agent.max_bitstream_bytes, self.bitstream_cache)
        if result['code'] == vocabulary.ProgramResult.SUCCESS:
            self.report_soon()
        LOG.info('Programming %s (driver %s) with image %s: %s %s',
                 deployable_name, driver_name, image_id,
                 vocabulary.ProgramResult(result['code']).name,
                 result['message'])
        return result

    @oslo_messaging.expose
    def prefetch_bitstream(self, context, image_id):
        """Put Glance image ``image_id`` into this host's bitstream cache
        (a cast: nobody waits; see ``AgentAPI.prefetch_bitstream``)."""
        cache = self.bitstream_cache
        if not cache.enabled:
            LOG.info('Prefetch of image %s ignored: [agent] '
                     'bitstream_cache_size is 0', image_id)
            return
        try:
            with programming.downloaded(
                    self.glance, image_id,
                    conf.CONF.agent.max_bitstream_bytes, cache):
                pass
        except programming.DownloadFailed as error:
            LOG.warning('Prefetch of image %s failed: %s', image_id,
                        error.message)
            return
        LOG.info('Prefetched image %s into the bitstream cache', image_id)

    @property
    def bitstream_cache(self):
        """The host's BitstreamCache, opened at first use in
        ``[DEFAULT] state_path`` (disabled when its directory cannot be
        made)."""
        with self._cache_lock:
            if self._bitstream_cache is None:
                self._bitstream_cache = _open_cache()
            return self._bitstream_cache

    def discover(self):
        """Every device the enabled drivers see, as DriverDevice trees."""
        devices = []
        for name, driver in self.drivers.items():
            found = driver.discover()
            LOG.debug('Driver %s found %d device(s)', name, len(found))
            devices.extend(found)
        return devices

    def collect_inventory(self):
        """The full inventory as report primitives, or None if a driver failed.

        A driver whose discovery raises contributes nothing, so a report
        sent without it would make the conductor delete its devices: the
        whole report is skipped instead, and tried again next time. A
        driver that says why (DiscoveryFailed) gets one ERROR line with its
        reason; anything else is unexpected and logged with its traceback.
        Each driver's discovery replaces its entry in ``deployables``, and
        a failed one removes it.
        """
        inventory = []
        failed = []
        for name, driver in self.drivers.items():
            devices = self._discover_for_report(name, driver)
            if devices is None:
                failed.append(name)
                continue
            inventory.extend(drivers_base.device_to_primitive(device, name)
                             for device in devices)
        if failed:
            LOG.warning('No inventory report from %s this time: driver(s) %s '
                        'failed, and an incomplete report would remove their '
                        'devices', self.host, ', '.join(failed))
            return None
        return inventory

    def _discover_for_report(self, name, driver):
        """``driver``'s devices, kept in ``deployables``; None if it failed."""
        try:
            devices = driver.discover()
        except drivers_base.DiscoveryFailed as error:
            LOG.error('Driver %s cannot tell which devices %s has: %s',
                      name, self.host, error)
        except Exception:
            LOG.exception('Driver %s failed to discover its devices', name)
        else:
            self.deployables.replace(name, devices)
            return devices
        self.deployables.forget(name)
        return None

    @agent_metrics.timed_report
    def report_inventory(self, context):
        """Send the full inventory to the conductor; return whether it was sent.

        :raises: oslo_messaging.MessagingException, CyborgException from the
            conductor.
        """
        with self.report_gate.reporting():
            inventory = self.collect_inventory()
            if inventory is None:
                return False
            # The conductor also updates Placement: allow it a whole
            # interval.
            timeout = max(conf.CONF.rpc_response_timeout,
                          conf.CONF.agent.report_interval)
            self.conductor.report_inventory(context, self.host, inventory,
                                            timeout=timeout)
        LOG.debug('Reported %d device(s) of %s', len(inventory), self.host)
        return True

    def start_periodic_tasks(self):
        """Report the inventory now and every [agent] report_interval seconds."""
        if self._report_thread is not None:
            return
        # An event per thread: a late thread never sees a new start's event.
        self._report_stop = threading.Event()
        self._report_wake = threading.Event()
        self._report_thread = threading.Thread(
            target=self._report_periodically,
            args=(self._report_stop, self._report_wake),
            name='inventory-report', daemon=True)
        self._report_thread.start()

    def stop_periodic_tasks(self):
        """Stop the inventory reports, waiting a little for one under way."""
        thread = self._report_thread
        if thread is None:
            return
        self._report_stop.set()
        self._report_wake.set()
        thread.join(REPORT_STOP_TIMEOUT)
        if thread.is_alive():
            LOG.warning('An inventory report of %s is still waiting for the '
                        'conductor; stopping without it', self.host)
        self._report_thread = None

    def report_soon(self):
        """Send the next inventory report now rather than at its interval.

        After programming: the report brings the region's new function and
        functions to the database and Placement. Nothing when the periodic
        reports are not running.
        """
        wake = self._report_wake
        if wake is not None:
            wake.set()

    def _report_periodically(self, stop, wake):
        while not stop.is_set():
            started = time.monotonic()
            lost = None
            try:
                self.report_inventory(cyborg_context.get_admin_context())
            except exception.DatabaseUnavailable as error:
                lost = error
            except Exception as error:
                # One line per failure; the next interval tries again.
                LOG.warning('Inventory report of %s to the conductor failed: '
                            '%s: %s', self.host, type(error).__name__, error)
            else:
                db_api.OUTAGE.answered()
            if lost is not None:
                # The conductor's: logged once per outage, not per report.
                db_api.OUTAGE.failed(lost)
            # Read at every round, so a reloaded configuration applies.
            interval = conf.CONF.agent.report_interval
            elapsed = time.monotonic() - started
            wake.wait(max(0, interval - elapsed))
            wake.clear()

    def heartbeat(self, context):
        """Send this agent's heartbeat to the conductor (not an RPC endpoint)."""
        # A heartbeat older than one interval is worth nothing: do not wait
        # longer than that for the conductor.
        self.conductor.report_heartbeat(
            context, self.host, BINARY, rpcapi.TOPIC,
            timeout=conf.CONF.report_interval)



def _open_cache():
    """The BitstreamCache of [DEFAULT] state_path and [agent]
    bitstream_cache_size; a disabled one when it cannot be opened."""
    directory = bitstream_cache.cache_directory(conf.CONF.state_path)
    capacity = conf.CONF.agent.bitstream_cache_size * MIB
    try:
        return bitstream_cache.BitstreamCache(directory, capacity)
    except OSError as error:
        LOG.error('The bitstream cache %s cannot be opened, bitstreams are '
                  'downloaded at every use: %s', directory, error)
        return bitstream_cache.BitstreamCache(directory, 0)


def _index_deployables(devices):
    """{deployable name: (device, deployable)} over the whole trees."""
    index = {}
    for device in devices:
        pending = list(device.deployables)
        while pending:
            deployable = pending.pop()
            index[deployable.name] = (device, deployable)
            pending.extend(deployable.children)
    return index


def load_drivers(names):
    """The drivers called ``names``, instantiated, by name, in that order.

    :raises: UnknownDriver, DriverLoadFailed
    """
    def refuse_missing(missing):
        raise UnknownDriver(names=', '.join(sorted(missing)),
                            namespace=DRIVER_NAMESPACE)

    def refuse_failed(manager, entry_point, error):
        raise DriverLoadFailed(name=entry_point.name, reason=error)

    manager = named.NamedExtensionManager(
        DRIVER_NAMESPACE, names=list(names), invoke_on_load=True,
        name_order=True, on_missing_entrypoints_callback=refuse_missing,
        on_load_failure_callback=refuse_failed)
    return {extension.name: extension.obj for extension in manager}
