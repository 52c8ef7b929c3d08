"""cyborg-conductor, -api and -agent as processes, for the end-to-end tests.

:class:`DeploymentMixin` gives a test a database of ``backend`` migrated to
head, its own RabbitMQ virtual host, a real Placement served over HTTP and
a temporary state directory holding the fake driver's fleet file;
:meth:`DeploymentMixin._start_services` starts the three services on them,
the agent once the conductor consumes its topic;
:meth:`DeploymentMixin._start_conductor` adds a second conductor (they are
active-active), :meth:`DeploymentMixin._start_api` a second API process,
:meth:`DeploymentMixin._start_agent` the agent of a second
compute node, and :meth:`DeploymentMixin._restart_agent` starts a killed
agent again. The waits fail with the tails of the services' logs.

The services' broker is ``self.rabbit``'s ``transport_url``: a test may
replace ``self.rabbit`` (a RabbitMQ node or cluster of its own) after
setUp, and give every service ``[oslo_messaging_rabbit]`` options with
``messaging_options``.
"""

from concurrent import futures
import os
import re
import uuid

import fixtures
import yaml

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import objects
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import messaging
from cyborg.tests.fixtures import placement
from cyborg.tests.fixtures import processes

WAIT_TIMEOUT = 30


def write_fleet(path, fleet):
    """Replace the fleet file at once, so a report never reads half of it."""
    partial = path + '.partial'
    with open(partial, 'w') as fleet_file:
        yaml.safe_dump(fleet, fleet_file)
    os.replace(partial, path)


class DeploymentMixin:
    """The services of one compute host; ``backend`` is their database."""

    backend = None
    # {option: value} of [oslo_messaging_rabbit] for every service.
    messaging_options = None
    # Placement's database: its own SQLite file (None), or a database of
    # this backend, as deployed: SQLite answers writes that meet (several
    # agents' first reports, upstream's and ours) with 500s.
    placement_backend = None

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(
            database.Database(backend=self.backend, schema='migrations'))
        self.rabbit = self.useFixture(messaging.RabbitIsolation())
        placement_url = None
        if self.placement_backend is not None:
            placement_url = self.useFixture(database.Database(
                backend=self.placement_backend, schema=None,
                patch_facade=False)).url
        self.placement = self.useFixture(placement.PlacementFixture(
            serve=True, database_url=placement_url))
        self.context = cyborg_context.get_admin_context()
        self.suffix = uuid.uuid4().hex[:8]
        self.host = 'compute-%s' % self.suffix
        self.state_path = self.useFixture(fixtures.TempDir()).path
        self.fleet_path = os.path.join(self.state_path, 'fleet.yaml')
        self.api_port = processes.free_port()
        self.services = []

    def _start_services(self, fleet, conductor_options=None,
                        agent_options=None, api_options=None):
        """Write ``fleet``; start conductor, API and agent.

        ``conductor_options`` ({group: {option: value}}) replace groups of
        the conductor's config, kept as ``self.conductor_config``;
        ``agent_options`` and ``api_options`` add groups to the agent's and
        the API's (the agent's is kept as ``self.agent_config``).
        """
        write_fleet(self.fleet_path, fleet)
        common = {
            'transport_url': self.rabbit.transport_url,
            'control_exchange': self.rabbit.control_exchange,
            'report_interval': 1,
            # Above the agent's wait for a report under way (10 s) and its
            # RPC server's for calls under way, which a loaded machine
            # needs: past it oslo.service ends the process with SIGALRM.
            'graceful_shutdown_timeout': 20,
            'rpc_response_timeout': 10,
            'debug': True,
            'state_path': self.state_path,
        }
        self.conductor_config = {
            'DEFAULT': dict(common, host='conductor-%s' % self.suffix),
            'database': {'connection': self.database.url},
            'placement': {'auth_type': 'admin_token',
                          'endpoint': self.placement.endpoint,
                          'token': placement.TOKEN},
        }
        self.conductor_config.update(self._messaging_groups())
        self.conductor_config.update(conductor_options or {})
        self.conductor = self.useFixture(processes.ServiceProcess(
            'cyborg-conductor', self.conductor_config))
        api_config = {
            'DEFAULT': dict(common, host='api-%s' % self.suffix,
                            auth_strategy='noauth'),
            'api': {'host_ip': '127.0.0.1', 'port': self.api_port,
                    'api_workers': 2},
            'database': {'connection': self.database.url},
        }
        api_config.update(self._messaging_groups())
        api_config.update(api_options or {})
        self.api_config = api_config
        self.api = self.useFixture(processes.ServiceProcess('cyborg-api',
                                                            api_config))
        self.services = [self.conductor, self.api]
        # The agent starts once the conductor consumes its topic, so that
        # its first report is not sent into an empty exchange.
        self._wait_until(lambda: self._heartbeat_of(
            'conductor-%s' % self.suffix, 'cyborg-conductor'),
            'the conductor heartbeat')
        # No [database] and no [placement]: the agent reaches both only
        # through the conductor.
        agent_config = {
            'DEFAULT': dict(common, host=self.host),
            'agent': {'enabled_drivers': 'fake_driver',
                      'fake_inventory': self.fleet_path,
                      'report_interval': 1},
        }
        agent_config.update(self._messaging_groups())
        agent_config.update(agent_options or {})
        self.agent_config = agent_config
        self.agent = self.useFixture(processes.ServiceProcess(
            'cyborg-agent', agent_config))
        self.services.append(self.agent)

    def _messaging_groups(self):
        """The config groups ``messaging_options`` adds to a service's."""
        if not self.messaging_options:
            return {}
        return {'oslo_messaging_rabbit': dict(self.messaging_options)}

    def _start_conductor(self, host):
        """Start one more conductor, on ``host``, once the first runs.

        It shares the first one's broker, database and options (so the
        conductor topic and the binds): conductors are active-active.
        Returns its ServiceProcess, once its heartbeat is recorded.
        """
        config = dict(self.conductor_config)
        config['DEFAULT'] = dict(config['DEFAULT'], host=host)
        conductor = self.useFixture(processes.ServiceProcess(
            'cyborg-conductor', config))
        self.services.append(conductor)
        self._wait_until(lambda: self._heartbeat_of(host, 'cyborg-conductor'),
                         'the heartbeat of conductor %s' % host)
        return conductor

    def _start_api(self, host):
        """Start one more API process, on ``host``, with the first one's
        options on a port of its own. Returns its ServiceProcess and port
        at once: wait for it with ``_wait_until``."""
        port = processes.free_port()
        config = {group: dict(options)
                  for group, options in self.api_config.items()}
        config['DEFAULT']['host'] = host
        config['api']['port'] = port
        api = self.useFixture(processes.ServiceProcess('cyborg-api', config))
        self.services.append(api)
        return api, port

    def _start_agent(self, host, fleet):
        """Start the agent of another compute node, ``host``, with the
        devices of ``fleet`` (in a fleet file of its own) and the first
        agent's other options. Returns its ServiceProcess at once: wait
        for its first report with the API or ``os_acc.initialize``.
        """
        fleet_path = os.path.join(self.state_path, 'fleet-%s.yaml' % host)
        write_fleet(fleet_path, fleet)
        config = {group: dict(options)
                  for group, options in self.agent_config.items()}
        config['DEFAULT']['host'] = host
        config['agent']['fake_inventory'] = fleet_path
        agent = self.useFixture(processes.ServiceProcess('cyborg-agent',
                                                         config))
        self.services.append(agent)
        return agent

    def _restart_agent(self):
        """Start the agent again with its config (after a kill)."""
        if self.agent in self.services:
            self.services.remove(self.agent)
        self.agent = self.useFixture(processes.ServiceProcess(
            'cyborg-agent', self.agent_config))
        self.services.append(self.agent)
        return self.agent

    # -- The API -----------------------------------------------------------

    def _api(self, method, path, body=None):
        """One JSON request to the API; (status, decoded body)."""
        return api_request(self.api_port, method, path, body, timeout=60)

    def _region_providers(self, count):
        """The rp_uuids of the cards' first regions (``*-region0``), sorted,
        once ``count`` of them have one; else None (for ``_wait_until``)."""
        try:
            status, body = self._api('GET', '/v2/deployables')
        except ConnectionError:
            return None  # the API is not listening yet
        if status != 200:
            return None
        regions = [item['rp_uuid'] for item in body['deployables']
                   if item['name'].endswith('-region0')]
        if len(regions) != count or None in regions:
            return None
        return sorted(regions)

    # -- Waiting -----------------------------------------------------------

    def _logs(self):
        return processes.log_tails(self.services)

    def _wait_until(self, probe, what, timeout=WAIT_TIMEOUT):
        """Return ``probe()``'s first true value; fail after ``timeout`` s.

        A probe whose connection is refused (the API not listening yet: on
        a loaded machine its workers may start after the conductor's first
        heartbeat) is asked again; a service that exited fails the wait.
        """
        def patient():
            try:
                return probe()
            except ConnectionError:
                return None
        return processes.wait_until(patient, what, self.services, timeout)

    def _heartbeat_of(self, host, binary):
        try:
            return objects.Service.get_by_host_and_binary(self.context, host,
                                                          binary)
        except exception.ResourceNotFound:
            return None

    def _reports_done(self):
        """How many inventory reports the conductor has answered."""
        # With debug on, the log line goes on with the function's location.
        return len(re.findall(r'Reported \d+ device\(s\) of %s(?:\s|$)'
                              % re.escape(self.host), self.agent.log()))

    def _wait_for_reports(self, count, what):
        """Wait until ``count`` more reports than now have been answered."""
        target = self._reports_done() + count
        self._wait_until(lambda: self._reports_done() >= target,
                         '%d more report(s) of %s (%s)'
                         % (count, self.host, what))

    # -- Stopping ----------------------------------------------------------

    def _assert_clean_stop(self, services, tolerated_loggers=()):
        """SIGTERM stops ``services`` with exit code 0 and no traceback
        (but those logged by ``tolerated_loggers``: each line oslo.log
        writes of a traceback names its logger)."""
        with futures.ThreadPoolExecutor(len(services)) as pool:
            stopped = list(pool.map(lambda service: service.stop(timeout=25),
                                    services))
        self.assertEqual([0] * len(services),
                         [exit_code for exit_code, _ in stopped], self._logs())
        for service in services:
            self.assertEqual([], [
                line for line in service.log().splitlines()
                if 'Traceback' in line and not any(
                    ' %s ' % logger in line for logger in tolerated_loggers)],
                service.script)


# One JSON request to the API on a port; (status, decoded body).
api_request = processes.json_request
