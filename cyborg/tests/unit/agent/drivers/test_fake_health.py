"""The fake driver's health: a card's ``health`` key and scripted
``faults``, counted in discoveries, and a file rewritten under a running
driver."""

from cyborg.agent.drivers import base as driver_base
from cyborg.agent.drivers import fake
from cyborg.agent.drivers import fake_inventory
from cyborg.tests.unit.agent.drivers import test_fake

HEALTHY = ('healthy', None)


class TestFakeHealth(test_fake.FakeDriverTestCase):

    def driver(self, data):
        return fake.FakeDriver(inventory_path=self.inventory_file(data),
                               host='compute-1', state_path=self.directory)

    @staticmethod
    def healths(devices):
        return [(device.health, device.health_reason) for device in devices]

    def test_healthy_by_default_and_in_the_report(self):
        driver = fake.FakeDriver(state_path=self.directory, host='h')
        [device] = driver.discover()
        self.assertEqual(HEALTHY, (device.health, device.health_reason))
        primitive = driver_base.device_to_primitive(device, 'fake')
        self.assertEqual(('healthy', None), (primitive['health'],
                                             primitive['health_reason']))
        devices = self.driver({'fpgas': [{'count': 2}], 'gpus': [{}]}
                              ).discover()
        self.assertEqual([HEALTHY] * 3, self.healths(devices))

    def test_a_scripted_transient_fault_and_a_fatal_one(self):
        driver = self.driver({
            'fpgas': [{'faults': [{'at_report': 2, 'health': 'degraded',
                                   'reason': 'AER non-fatal', 'recover_at': 4}
                                  ]}],
            'gpus': [{'count': 2, 'faults': [
                {'at_report': 3, 'health': 'failed', 'reason': 'gone'}]}]})
        seen = [self.healths(driver.discover()) for _ in range(5)]
        degraded = ('degraded', 'AER non-fatal')
        failed = ('failed', 'gone')
        self.assertEqual([
            [HEALTHY, HEALTHY, HEALTHY],
            [degraded, HEALTHY, HEALTHY],
            [degraded, failed, failed],
            [HEALTHY, failed, failed],
            [HEALTHY, failed, failed]], seen)
        self.assertEqual(5, driver.reports)

    def test_the_file_rewritten_under_a_running_driver(self):
        driver = self.driver({'fpgas': [{}]})
        self.assertEqual([HEALTHY], self.healths(driver.discover()))
        self.inventory_file({'fpgas': [{'health': 'degraded',
                                        'health_reason': 'set by a test'}]})
        self.assertEqual([('degraded', 'set by a test')],
                         self.healths(driver.discover()))
        self.inventory_file({'fpgas': [{}]})
        self.assertEqual([HEALTHY], self.healths(driver.discover()))

    def test_bad_health_keys_name_the_key(self):
        bad = (
            ({'health': 'sick'}, 'fpgas[0].health'),
            ({'faults': [{'health': 'degraded'}]},
             'fpgas[0].faults[0].at_report: missing'),
            ({'faults': [{'at_report': 0, 'health': 'degraded'}]},
             'fpgas[0].faults[0].at_report'),
            ({'faults': [{'at_report': 3, 'health': 'failed',
                          'recover_at': 3}]},
             'fpgas[0].faults[0].recover_at'),
            ({'faults': [{'at_report': 1, 'health': 'bad'}]},
             'fpgas[0].faults[0].health'),
            ({'faults': [{'at_report': 1, 'health': 'failed', 'x': 1}]},
             'fpgas[0].faults[0].x: unknown key'),
        )
        for entry, where in bad:
            error = self.assertRaises(
                fake_inventory.InvalidInventory,
                fake_inventory.validate_inventory, {'fpgas': [entry]})
            self.assertIn(where, str(error))
