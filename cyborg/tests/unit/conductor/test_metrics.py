"""cyborg-conductor's metrics server, scraped after a real bind, a real
inventory report and an endpoint that raised.

The bind runs on ``test_bind_transactions.BindingTestsBase``: a real agent
with the fake driver over fake://, four fake FPGA cards on HOST.
"""

import prometheus_client
import sqlalchemy as sa
from oslo_utils import uuidutils

from cyborg.common import vocabulary
from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import metrics
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.conductor import metrics as conductor_metrics
from cyborg.db import models
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import messaging
from cyborg.tests.fixtures import placement as placement_fixture
from cyborg.tests.unit.agent import test_report
from cyborg.tests.unit.conductor import test_bind_transactions as cases
from cyborg.tests.unit.db import records
from cyborg.tests.unit.metrics import scraping

HOST = cases.HOST
BOUND = vocabulary.ARQState.BOUND
BIND_COUNT = 'cyborg_conductor_bind_duration_seconds_count'
REPORT_COUNT = 'cyborg_conductor_inventory_report_duration_seconds_count'
REPORTS = 'cyborg_conductor_inventory_reports_total'
RPC_ERRORS = 'cyborg_conductor_rpc_errors_total'


def start_exporter(test):
    """The conductor's metrics server on a free port, measuring enabled."""
    exporter = conductor_metrics.exporter('127.0.0.1', 0)
    exporter.start()
    test.addCleanup(exporter.stop)
    test.addCleanup(metrics.disable)
    return exporter


class TestBindMetrics(cases.BindingTestsBase, base.TestCase):

    def test_a_bind_moves_the_arq_gauges_and_the_bind_histogram(self):
        exporter = start_exporter(self)
        before = scraping.scrape(exporter.port)
        self.assertEqual(1, before.value('cyborg_conductor_fleet_read'))
        self.assertEqual(0, before.value('cyborg_arqs', state=BOUND))
        self.assertEqual(4, before.value('cyborg_devices', type='FPGA',
                                         host=HOST))
        self.assertEqual(0, before.value('cyborg_attach_handles_in_use',
                                         type='FPGA', host=HOST))
        arq_uuid = self.make_arq(self.providers[0])
        started = scraping.scrape(exporter.port)
        self.assertEqual(1, started.value(
            'cyborg_arqs', state=vocabulary.ARQState.BIND_STARTED))

        self.assertEqual({arq_uuid: BOUND}, self.binder.bind([arq_uuid]))

        after = scraping.scrape(exporter.port)
        self.assertEqual(1, after.value('cyborg_arqs', state=BOUND))
        self.assertEqual(0, after.value('cyborg_arqs',
                                        state=vocabulary.ARQState.BIND_STARTED))
        self.assertEqual(1, after.value(BIND_COUNT, state=BOUND)
                         - before.value(BIND_COUNT, state=BOUND))
        self.assertEqual(1, after.value('cyborg_attach_handles_in_use',
                                        type='FPGA', host=HOST))
        self.assertEqual(1, after.value('cyborg_devices_in_use',
                                        type='FPGA', host=HOST))
        self.assertEqual(self.handles_total(), after.value(
            'cyborg_attach_handles', type='FPGA', host=HOST))

    def test_nothing_is_observed_when_metrics_are_off(self):
        before = self.read_registry().value(BIND_COUNT, state=BOUND)
        arq_uuid = self.make_arq(self.providers[0])

        self.assertEqual({arq_uuid: BOUND}, self.binder.bind([arq_uuid]))

        self.assertEqual(before, self.read_registry().value(BIND_COUNT,
                                                            state=BOUND))

    def read_registry(self):
        return scraping.parse(prometheus_client.generate_latest(
            conductor_metrics.REGISTRY).decode('utf-8'))

    def handles_total(self):
        with self.database.engine.connect() as connection:
            return connection.execute(sa.select(sa.func.count()).select_from(
                cases.AttachHandle)).scalar()


class TestConductorEndpointMetrics(base.TestCase):
    """The conductor's manager served the way cyborg-conductor serves it
    with metrics on: wrapped by ``counting_endpoints``."""

    def setUp(self):
        super().setUp()
        self.useFixture(database.Database(backend='sqlite'))
        self.useFixture(placement_fixture.PlacementFixture())
        self.messaging = self.useFixture(messaging.Messaging(conf.CONF))
        self.conductor = conductor_manager.ConductorManager(host='conductor-1')
        self.messaging.serve(
            conductor_rpcapi.TOPIC, 'conductor-1',
            [conductor_metrics.counting_endpoints(self.conductor)])
        self.context = cyborg_context.get_admin_context()
        self.api = conductor_rpcapi.ConductorAPI()
        self.exporter = start_exporter(self)

    def test_an_inventory_report_is_timed(self):
        before = scraping.scrape(self.exporter.port)
        inventory = [test_report.drivers.device_to_primitive(
            test_report.gpu(0x3b), 'gpu_driver')]

        self.api.report_inventory(self.context, 'compute-1', inventory)

        after = scraping.scrape(self.exporter.port)
        self.assertEqual(1, after.value(REPORT_COUNT, outcome='ok')
                         - before.value(REPORT_COUNT, outcome='ok'))
        self.assertEqual(before.value(REPORT_COUNT, outcome='failed'),
                         after.value(REPORT_COUNT, outcome='failed'))
        self.assertEqual(1, after.value('cyborg_devices', type='GPU',
                                        host='compute-1'))

    def test_reports_are_counted_applied_or_unchanged(self):
        inventory = [test_report.drivers.device_to_primitive(
            test_report.gpu(0x3b), 'gpu_driver')]
        before = scraping.scrape(self.exporter.port)

        self.api.report_inventory(self.context, 'compute-2', inventory)
        self.api.report_inventory(self.context, 'compute-2', inventory)
        self.api.report_inventory(self.context, 'compute-2', inventory)

        after = scraping.scrape(self.exporter.port)

        def grown(result):
            return (after.value(REPORTS, result=result)
                    - before.value(REPORTS, result=result))

        # The first is applied in full; the same report again is skipped.
        self.assertEqual(1, grown('applied'))
        self.assertEqual(2, grown('unchanged'))

    def test_exceptions_of_endpoints_are_counted_by_method(self):
        labels = dict(method='delete_arqs', error='ResourceNotFound')
        before = scraping.scrape(self.exporter.port)

        self.assertRaises(exception.ResourceNotFound, self.api.delete_arqs,
                          self.context, [uuidutils.generate_uuid()])
        # A call that succeeds counts nothing.
        self.assertEqual('conductor-1', self.api.ping(self.context))

        after = scraping.scrape(self.exporter.port)
        self.assertEqual(1, after.value(RPC_ERRORS, **labels)
                         - before.value(RPC_ERRORS, **labels))
        self.assertEqual(
            sum(value for (name, _), value in before.items()
                if name == RPC_ERRORS) + 1,
            sum(value for (name, _), value in after.items()
                if name == RPC_ERRORS))


class TestFleetCollectorQueries(base.TestCase):
    """The collector's statements are the same three whatever the fleet."""

    backend = 'sqlite'

    def setUp(self):
        super().setUp()
        self.database = self.useFixture(database.Database(
            backend=self.backend))
        self.context = cyborg_context.get_admin_context()
        self.profile = records.make_device_profile(self.context)
        self.statements = []
        sa.event.listen(self.database.engine, 'before_cursor_execute',
                        self._count)
        self.addCleanup(sa.event.remove, self.database.engine,
                        'before_cursor_execute', self._count)

    def _count(self, connection, cursor, statement, *args):
        if statement.split(None, 1)[0].upper() == 'SELECT':
            self.statements.append(statement)

    def add_hosts(self, count, first=0):
        for number in range(first, first + count):
            host = 'compute-%d' % number
            device = records.make_device(self.context, hostname=host)
            deployable = records.make_deployable(self.context, device)
            cpid = records.make_controlpath_id(self.context, device)
            for function in range(3):
                records.make_attach_handle(self.context, deployable, cpid,
                                           in_use=function == 0)
            records.make_arq(self.context, self.profile, state=BOUND,
                             hostname=host)

    def collect(self):
        del self.statements[:]
        families = {family.name: family for family in
                    conductor_metrics.FleetCollector().collect()}
        return len(self.statements), families

    def test_three_statements_for_one_host_or_twenty(self):
        self.add_hosts(1)
        small, families = self.collect()
        self.assertEqual(1, families['cyborg_attach_handles_in_use']
                         .samples[0].value)
        self.add_hosts(19, first=1)
        large, families = self.collect()

        self.assertEqual(3, small)
        self.assertEqual(3, large)
        self.assertEqual(20, len(families['cyborg_devices'].samples))
        bound = [sample.value for sample in families['cyborg_arqs'].samples
                 if sample.labels['state'] == BOUND]
        self.assertEqual([20], bound)

    def _values(self, families, name):
        return {tuple(sample.labels.values())[0]: sample.value
                for sample in families[name].samples}

    def test_devices_and_deployables_by_health_and_drain(self):
        self.add_hosts(4)
        devices = sa.table('devices', sa.column('hostname'),
                           sa.column('health'), sa.column('drain_since'),
                           sa.column('id'))
        deployables = sa.table('deployables', sa.column('device_id'),
                               sa.column('health'), sa.column('drain_since'))
        now = sa.func.current_timestamp()
        with self.database.engine.begin() as connection:
            connection.execute(sa.update(devices).where(
                devices.c.hostname == 'compute-0').values(
                health='degraded', drain_since=now))
            connection.execute(sa.update(devices).where(
                devices.c.hostname == 'compute-1').values(health='failed'))
            # Compute-2's deployable: drained, its in-use handle freed.
            connection.execute(sa.update(deployables).where(
                deployables.c.device_id == sa.select(devices.c.id).where(
                    devices.c.hostname == 'compute-2').scalar_subquery())
                .values(drain_since=now, health='degraded'))
            handles = models.AttachHandle.__table__
            connection.execute(sa.update(handles).where(
                handles.c.deployable_id == sa.select(
                    models.Deployable.id).join(
                        models.Device,
                        models.Device.id == models.Deployable.device_id)
                .where(models.Device.hostname == 'compute-2')
                .scalar_subquery()).values(in_use=False))
        count, families = self.collect()
        self.assertEqual(3, count)
        self.assertEqual({'healthy': 2, 'degraded': 1, 'failed': 1},
                         self._values(families, 'cyborg_devices_by_health'))
        self.assertEqual({'healthy': 3, 'degraded': 1, 'failed': 0},
                         self._values(families,
                                      'cyborg_deployables_by_health'))
        # Compute-0's card still has a handle in use: draining.
        self.assertEqual({'draining': 1, 'drained': 0},
                         self._values(families, 'cyborg_devices_by_drain'))
        self.assertEqual({'draining': 0, 'drained': 1},
                         self._values(families, 'cyborg_deployables_by_drain'))


class TestFleetCollectorQueriesMySQL(TestFleetCollectorQueries):

    backend = 'mysql'


class TestFleetCollectorQueriesPostgreSQL(TestFleetCollectorQueries):

    backend = 'postgresql'
