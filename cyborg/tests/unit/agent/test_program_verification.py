"""The agent verifies every load: program and prepare_arqs read the region
back, through the agent RPC client and the fake:// transport to a real
AgentManager with the fake driver, whose fleet file scripts loads that
leave something else (``program.loads``)."""

import os
import uuid

import fixtures

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg.agent import manager
from cyborg.agent import rpcapi
from cyborg.agent.drivers import fake
from cyborg.agent.drivers import fake_fpga
from cyborg.agent.drivers import fake_inventory
from cyborg.clients import glance as glance_client
from cyborg.common import vocabulary
from cyborg.tests import base
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.fixtures import messaging
from cyborg.tests.unit.agent import test_prepare_programming
from cyborg.tests.unit.agent import test_program

HOST = 'compute-1'
SHELL = '5d1e7a3c9b2f4e6a8c0d1f2e3a4b5c6d'
FUNCTION = '11112222333344445555666677778888'
# One card per way a load can end, in bus order 10, 11, 12, 13: as asked,
# nothing new, another function, unreadable. The card at bus 10 has a shell.
FLEET = """
fpgas:
  - {vendor: "0x8086", vendor_name: intel, board: pac_arria10,
     shell_id: "%s", regions: [{vfs_per_pf: 1}]}
  - {vendor: "0x8086", vendor_name: intel, board: pac_arria10,
     regions: [{vfs_per_pf: 1, function_id: "%s",
                program: {loads: nothing}}]}
  - {vendor: "0x8086", vendor_name: intel, board: pac_arria10,
     regions: [{vfs_per_pf: 1, program: {loads: other}}]}
  - {vendor: "0x8086", vendor_name: intel, board: pac_arria10,
     regions: [{vfs_per_pf: 1, program: {loads: unreadable}}]}
""" % (SHELL, FUNCTION)
Result = vocabulary.ProgramResult


def region(card):
    return 'fpga-0000:%02x:00.0-region0' % (0x10 + card)


class VerificationTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.messaging = self.useFixture(messaging.Messaging(conf.CONF))
        self.useFixture(glance_fixture.GlanceFixture())
        self.directory = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(self.directory, 'fleet.yaml')
        with open(path, 'w') as stream:
            stream.write(FLEET)
        self.driver = fake.FakeDriver(path, host=HOST,
                                      state_path=self.directory)
        self.agent = manager.AgentManager(host=HOST, driver_names=[])
        self.agent.drivers = {'fake_driver': self.driver}
        self.messaging.serve(rpcapi.TOPIC, HOST, [self.agent])
        self.client = rpcapi.AgentAPI()
        self.context = cyborg_context.get_admin_context()
        self.function = uuid.uuid4()
        self.image = self._image()

    def _image(self):
        path = os.path.join(self.directory, 'bitstream.gbs')
        with open(path, 'wb') as stream:
            stream.write(test_program.DATA)
        properties = {'bs-name': 'aes', 'bs-uuid': str(uuid.uuid4()),
                      'vendor': 'intel', 'board': 'pac_arria10',
                      'version': '1', 'driver_ver': '1',
                      'driver_path': '/opt',
                      'function_uuid': str(self.function)}
        return glance_client.GlanceClient(conf.CONF).upload(
            path, 'aes', properties, ['FPGA'])['id']

    def program(self, card):
        return self.client.program(self.context, HOST, 'fake_driver',
                                   region(card), self.image, timeout=30)

    def prepare(self, card):
        arq = test_prepare_programming.arq('a', card, bitstream_id=self.image)
        arq['attach_info']['device'] = '01'
        return self.client.prepare_arqs(self.context, HOST, [arq],
                                        timeout=30)['a']

    def test_a_verified_load_answers_what_the_region_holds(self):
        answer = self.program(0)

        self.assertEqual({'code': Result.SUCCESS, 'message': answer['message'],
                          'loaded': {'bitstream_id': self.image,
                                     'function_id': self.function.hex}},
                         answer)

    def test_a_load_that_changed_nothing_fails_as_suspect(self):
        answer = self.program(1)

        self.assertEqual(Result.FAILED, answer['code'])
        self.assertTrue(answer['suspect'])
        self.assertNotIn('loaded', answer)
        self.assertEqual(
            'verification failed: the region reports function %s, not image '
            '%s (function %s)' % (FUNCTION, self.image, self.function),
            answer['message'])
        # The region still shows what it held.
        self.assertEqual(FUNCTION, self._attributes(1)['function_id'])

    def test_another_function_fails_and_shows_at_discovery(self):
        answer = self.program(2)

        self.assertEqual(Result.FAILED, answer['code'])
        self.assertTrue(answer['suspect'])
        self.assertIn('reports function %s, not image %s'
                      % (fake_fpga.OTHER_FUNCTION_ID, self.image),
                      answer['message'])
        # What the device reports is what the next report says.
        self.assertEqual(fake_fpga.OTHER_FUNCTION_ID,
                         self._attributes(2)['function_id'])

    def test_a_region_that_cannot_be_read_back_fails(self):
        answer = self.program(3)

        self.assertEqual(Result.FAILED, answer['code'])
        self.assertTrue(answer['suspect'])
        self.assertIn('cannot be read: simulated: region %s cannot be read '
                      'back' % region(3), answer['message'])

    def test_a_refusal_is_not_suspect(self):
        answer = self.client.program(self.context, HOST, 'fake_driver',
                                     'no-such-region', self.image,
                                     timeout=30)

        self.assertEqual(Result.INVALID_DEPLOYABLE, answer['code'])
        self.assertNotIn('suspect', answer)

    def test_a_bind_answers_the_readback_or_fails_as_suspect(self):
        self.assertEqual({'prepared': True, 'reason': None,
                          'readback': {'bitstream_id': self.image,
                                       'function_id': self.function.hex}},
                         self.prepare(0))
        failed = self.prepare(1)

        self.assertFalse(failed['prepared'])
        self.assertTrue(failed['suspect'])
        self.assertEqual(
            'deployable %s: verification failed: the region reports function '
            '%s, not image %s (function %s)'
            % (region(1), FUNCTION, self.image, self.function),
            failed['reason'])

    def test_the_card_reports_its_shell(self):
        devices = self.driver.discover()

        self.assertEqual({'board': 'pac_arria10', 'shell_id': SHELL},
                         devices[0].vendor_board_info)
        self.assertEqual({'board': 'pac_arria10'},
                         devices[1].vendor_board_info)

    def test_the_fleet_file_checks_its_keys(self):
        for entry, message in (
                ({'shell_id': 'not-a-uuid'}, 'fpgas[0].shell_id: expected a '
                                             'uuid'),
                ({'regions': [{'program': {'loads': 'maybe'}}]},
                 'fpgas[0].regions[0].program.loads: expected one of asked, '
                 'nothing, other, unreadable')):
            with self.subTest(entry=entry):
                error = self.assertRaises(
                    fake_inventory.InvalidInventory,
                    fake_inventory.validate_inventory, {'fpgas': [entry]})
                self.assertIn(message, str(error))

    def _attributes(self, card):
        for device in self.driver.discover():
            for root in device.deployables:
                for child in root.children:
                    if child.name == region(card):
                        return child.attributes
        raise AssertionError('no region %s' % region(card))
