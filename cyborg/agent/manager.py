"""The agent's RPC endpoints, its drivers, its heartbeat and inventory reports.

The inventory report runs in a thread of its own: at start and every
[agent] report_interval seconds the agent sends the full inventory of all
its drivers to the conductor (``ConductorAPI.report_inventory``).
"""

import json
import logging
import threading
import time

import oslo_messaging
from stevedore import named

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg.agent import rpcapi
from cyborg.agent.drivers import base as drivers_base
from cyborg.conductor import rpcapi as conductor_rpcapi

LOG = logging.getLogger(__name__)

BINARY = 'cyborg-agent'
DRIVER_NAMESPACE = 'cyborg.accelerator.driver'
# How long stopping waits for a report under way before giving up on it.
REPORT_STOP_TIMEOUT = 10
# prepare_arqs answers this many seconds before its caller stops waiting,
# but works at least PREPARE_MIN_SECONDS.
PREPARE_ANSWER_MARGIN = 1
PREPARE_MIN_SECONDS = 0.5


class UnknownDriver(exception.CyborgException):
    msg_fmt = ('[agent] enabled_drivers names %(names)s, which no installed '
               'package provides (entry points of %(namespace)s).')


class DriverLoadFailed(exception.CyborgException):
    msg_fmt = 'Accelerator driver %(name)s failed to load: %(reason)s'


class AgentManager:
    """Endpoints of the cyborg-agent topic of one host, and its drivers."""

    target = oslo_messaging.Target(version='1.1')

    def __init__(self, host=None, driver_names=None):
        """Load the drivers (default: [agent] enabled_drivers).

        :raises: UnknownDriver, DriverLoadFailed
        """
        self.host = host or conf.CONF.host
        if driver_names is None:
            driver_names = conf.CONF.agent.enabled_drivers
        self.drivers = load_drivers(driver_names)
        self.conductor = conductor_rpcapi.ConductorAPI()
        self._report_thread = None
        self._report_stop = None

    @oslo_messaging.expose
    def ping(self, context):
        """Answer with this agent's host name."""
        return self.host

    @oslo_messaging.expose
    def prepare_arqs(self, context, arqs, timeout=None):
        """Prepare the attach handle of each ARQ with the driver that has it.

        See ``AgentAPI.prepare_arqs`` for ``arqs`` and the answer. Each
        driver concerned discovers its devices once for the whole call; a
        handle it no longer reports, or a driver that fails, fails its ARQs
        only. The handles are prepared in parallel; with ``timeout`` (how
        long the caller waits) the answer comes a little before it, and an
        ARQ whose preparation is still running then fails, so that one
        stuck device does not take the others of the call down with it.
        """
        results = {}
        lock = threading.Lock()
        inventories = {}
        threads = []

        def prepare(arq, device, deployable, handle, driver):
            try:
                driver.prepare(device, deployable, handle,
                               arq.get('request_group') or {})
                result = {'prepared': True, 'reason': None}
            except drivers_base.PrepareFailed as error:
                result = {'prepared': False, 'reason': str(error)}
            except Exception as error:
                LOG.exception('Preparing the attach handle of ARQ %s failed',
                              arq['uuid'])
                result = {'prepared': False,
                          'reason': '%s: %s' % (type(error).__name__, error)}
            with lock:
                results.setdefault(arq['uuid'], result)

        for arq in arqs:
            try:
                found = self._find_attach_handle(arq, inventories)
            except Exception as error:
                results[arq['uuid']] = {'prepared': False,
                                        'reason': str(error)}
                continue
            thread = threading.Thread(
                target=prepare, args=(arq,) + found, daemon=True,
                name='prepare-%s' % arq['uuid'])
            thread.start()
            threads.append(thread)

        deadline = None
        if timeout:
            deadline = time.monotonic() + max(
                PREPARE_MIN_SECONDS, timeout - PREPARE_ANSWER_MARGIN)
        for thread in threads:
            thread.join(None if deadline is None
                        else max(0, deadline - time.monotonic()))
        with lock:
            for arq in arqs:
                results.setdefault(arq['uuid'], {
                    'prepared': False,
                    'reason': 'still preparing after %s s' % timeout})
            answer = dict(results)
        failed = sorted(uuid for uuid, result in answer.items()
                        if not result['prepared'])
        LOG.info('Prepared %d attach handle(s) for ARQs%s',
                 len(answer) - len(failed),
                 '; failed: %s' % ', '.join(failed) if failed else '')
        return answer

    def _find_attach_handle(self, arq, inventories):
        """(device, deployable, handle, driver) of an ARQ, from the inventory.

        ``inventories`` caches each driver's discovery for one call.

        :raises: PrepareFailed when no driver reports that handle now
        """
        names = ([arq['driver_name']]
                 if arq.get('driver_name') in self.drivers
                 else list(self.drivers))
        wanted = (arq['attach_type'], _canonical(arq['attach_info']))
        for name in names:
            if name not in inventories:
                inventories[name] = _index_deployables(
                    self.drivers[name].discover())
            found = inventories[name].get(arq['deployable_name'])
            if found is None:
                continue
            device, deployable = found
            for handle in deployable.attach_handles:
                if (handle.attach_type,
                        _canonical(handle.attach_info)) == wanted:
                    return device, deployable, handle, self.drivers[name]
        raise drivers_base.PrepareFailed(
            'host %s no longer reports attach handle %s %s of deployable %s'
            % (self.host, arq['attach_type'], _canonical(arq['attach_info']),
               arq['deployable_name']))

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
        """
        inventory = []
        failed = []
        for name, driver in self.drivers.items():
            try:
                inventory.extend(drivers_base.device_to_primitive(device, name)
                                 for device in driver.discover())
            except drivers_base.DiscoveryFailed as error:
                LOG.error('Driver %s cannot tell which devices %s has: %s',
                          name, self.host, error)
                failed.append(name)
            except Exception:
                LOG.exception('Driver %s failed to discover its devices', name)
                failed.append(name)
        if failed:
            LOG.warning('No inventory report from %s this time: driver(s) %s '
                        'failed, and an incomplete report would remove their '
                        'devices', self.host, ', '.join(failed))
            return None
        return inventory

    def report_inventory(self, context):
        """Send the full inventory to the conductor; return whether it was sent.

        :raises: oslo_messaging.MessagingException, CyborgException from the
            conductor.
        """
        inventory = self.collect_inventory()
        if inventory is None:
            return False
        # The conductor also updates Placement: allow it a whole interval.
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
        self._report_thread = threading.Thread(
            target=self._report_periodically, args=(self._report_stop,),
            name='inventory-report', daemon=True)
        self._report_thread.start()

    def stop_periodic_tasks(self):
        """Stop the inventory reports, waiting a little for one under way."""
        thread = self._report_thread
        if thread is None:
            return
        self._report_stop.set()
        thread.join(REPORT_STOP_TIMEOUT)
        if thread.is_alive():
            LOG.warning('An inventory report of %s is still waiting for the '
                        'conductor; stopping without it', self.host)
        self._report_thread = None

    def _report_periodically(self, stop):
        while not stop.is_set():
            started = time.monotonic()
            try:
                self.report_inventory(cyborg_context.get_admin_context())
            except Exception as error:
                # One line per failure; the next interval tries again.
                LOG.warning('Inventory report of %s to the conductor failed: '
                            '%s: %s', self.host, type(error).__name__, error)
            # Read at every round, so a reloaded configuration applies.
            interval = conf.CONF.agent.report_interval
            elapsed = time.monotonic() - started
            stop.wait(max(0, interval - elapsed))

    def heartbeat(self, context):
        """Send this agent's heartbeat to the conductor (not an RPC endpoint)."""
        # A heartbeat older than one interval is worth nothing: do not wait
        # longer than that for the conductor.
        self.conductor.report_heartbeat(
            context, self.host, BINARY, rpcapi.TOPIC,
            timeout=conf.CONF.report_interval)


def _canonical(info):
    return json.dumps(info, sort_keys=True, separators=(',', ':'))


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
