"""Which hosts a prefetch goes to: the fit of ``prefetching.fitting_hosts``
(the rule of ``bitstream_fit.check_fits``) over region rows, and what
``Prefetcher`` asks of Glance and of the agents."""

import types
import uuid

import fixtures
import oslo_messaging

from cyborg import bitstream as bitstreams
from cyborg import exception
from cyborg.conductor import prefetching
from cyborg.tests import base

REGION = '4d7e0c1b9a8f4e2d8c3b1a0f9e8d7c6b'
OTHER_REGION = '0a1b2c3d4e5f40718293a4b5c6d7e8f9'
SHELL = '11111111222233334444555555555555'


def row(host, region_id=REGION, vendor='0x8086', board='pac_arria10',
        shell=None):
    info = {'board': board}
    if shell:
        info['shell_id'] = shell
    return types.SimpleNamespace(
        hostname=host, deployable_name='%s-region0' % host, vendor=vendor,
        model='PAC', vendor_board_info=info, region_id=region_id)


def bitstream(**changes):
    image = {'id': str(uuid.uuid4()), 'tags': ['FPGA'], 'bs-name': 'aes',
             'bs-uuid': str(uuid.uuid4()), 'vendor': 'intel',
             'board': 'pac_arria10', 'version': '1', 'driver_ver': '1',
             'driver_path': '/opt', 'function_uuid': str(uuid.uuid4())}
    image.update(changes)
    return bitstreams.Bitstream.from_image(
        {key: value for key, value in image.items() if value is not None})


class FittingHostsTest(base.TestCase):

    def test_vendor_board_and_region_decide(self):
        rows = [row('a'), row('b', vendor='0x10ee'), row('c', board='other'),
                row('d', region_id=OTHER_REGION), row('e', region_id=None)]
        self.assertEqual(['a'], prefetching.fitting_hosts(
            bitstream(region_uuid=REGION), rows))
        # Without a region_uuid any region of the board fits.
        self.assertEqual(['a', 'd', 'e'], prefetching.fitting_hosts(
            bitstream(), rows))

    def test_a_partial_bitstream_needs_its_shell_loaded(self):
        rows = [row('a', shell=SHELL), row('b'),
                row('c', shell=OTHER_REGION)]
        self.assertEqual(['a'], prefetching.fitting_hosts(
            bitstream(shell_id=SHELL), rows))

    def test_each_host_once_sorted(self):
        rows = [row('b'), row('a'), row('b'), row('a', vendor='0x10ee')]
        self.assertEqual(['a', 'b'],
                         prefetching.fitting_hosts(bitstream(), rows))


class RecordingAgents:
    """Stands in for AgentAPI: records casts; a host may fail to send."""

    version_cap = '1.3'

    def __init__(self, prefetches=True, failing=()):
        self.prefetches = prefetches
        self.failing = failing
        self.casts = []

    def prefetch_bitstream(self, context, host, image_id):
        if host in self.failing:
            raise oslo_messaging.MessageDeliveryFailure('no route')
        self.casts.append((host, image_id))


class PrefetcherTest(base.TestCase):

    def setUp(self):
        super().setUp()
        self.glance = types.SimpleNamespace(get_image=self._get_image)
        self.useFixture(fixtures.MockPatch(
            'cyborg.db.queries.bitstream_targets.fpga_regions',
            return_value=[row('a'), row('b')]))

    def _get_image(self, image_id):
        if image_id != 'known':
            raise exception.ImageNotFound(image_id=image_id)
        return {'id': 'known', 'tags': ['FPGA'], 'bs-name': 'aes',
                'bs-uuid': str(uuid.uuid4()), 'vendor': 'intel',
                'board': 'pac_arria10', 'version': '1', 'driver_ver': '1',
                'driver_path': '/opt', 'function_uuid': str(uuid.uuid4())}

    def test_each_fitting_host_is_asked_and_answered(self):
        agents = RecordingAgents(failing=('b',))
        prefetcher = prefetching.Prefetcher(agents, lambda _: self.glance)

        answer = prefetcher.prefetch(None, 'known')

        # b could not be reached: it is not among the hosts asked.
        self.assertEqual({'image_id': 'known', 'hosts': ['a']}, answer)
        self.assertEqual([('a', 'known')], agents.casts)

    def test_an_unknown_image_asks_no_agent(self):
        agents = RecordingAgents()
        prefetcher = prefetching.Prefetcher(agents, lambda _: self.glance)
        self.assertRaises(exception.ImageNotFound, prefetcher.prefetch, None,
                          'unknown')
        self.assertEqual([], agents.casts)

    def test_agents_pinned_below_prefetching_is_a_conflict(self):
        agents = RecordingAgents(prefetches=False)
        prefetcher = prefetching.Prefetcher(agents, lambda _: self.glance)
        error = self.assertRaises(exception.Conflict, prefetcher.prefetch,
                                  None, 'known')
        self.assertIn('[upgrade_levels] agent', str(error))
        self.assertEqual([], agents.casts)
