"""The agent's RPC endpoints, its drivers and its heartbeat via the conductor."""

import logging

import oslo_messaging
from stevedore import named

from cyborg import conf
from cyborg import exception
from cyborg.agent import rpcapi
from cyborg.conductor import rpcapi as conductor_rpcapi

LOG = logging.getLogger(__name__)

BINARY = 'cyborg-agent'
DRIVER_NAMESPACE = 'cyborg.accelerator.driver'


class UnknownDriver(exception.CyborgException):
    msg_fmt = ('[agent] enabled_drivers names %(names)s, which no installed '
               'package provides (entry points of %(namespace)s).')


class DriverLoadFailed(exception.CyborgException):
    msg_fmt = 'Accelerator driver %(name)s failed to load: %(reason)s'


class AgentManager:
    """Endpoints of the cyborg-agent topic of one host, and its drivers."""

    target = oslo_messaging.Target(version='1.0')

    def __init__(self, host=None, driver_names=None):
        """Load the drivers (default: [agent] enabled_drivers).

        :raises: UnknownDriver, DriverLoadFailed
        """
        self.host = host or conf.CONF.host
        if driver_names is None:
            driver_names = conf.CONF.agent.enabled_drivers
        self.drivers = load_drivers(driver_names)
        self.conductor = conductor_rpcapi.ConductorAPI()

    @oslo_messaging.expose
    def ping(self, context):
        """Answer with this agent's host name."""
        return self.host

    def discover(self):
        """Every device the enabled drivers see, as DriverDevice trees."""
        devices = []
        for name, driver in self.drivers.items():
            found = driver.discover()
            LOG.debug('Driver %s found %d device(s)', name, len(found))
            devices.extend(found)
        return devices

    def heartbeat(self, context):
        """Send this agent's heartbeat to the conductor (not an RPC endpoint)."""
        # A heartbeat older than one interval is worth nothing: do not wait
        # longer than that for the conductor.
        self.conductor.report_heartbeat(
            context, self.host, BINARY, rpcapi.TOPIC,
            timeout=conf.CONF.report_interval)


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
