"""The fleet page in headless Chromium against cyborg-aio's default fleet.

The page (GET /v2/fleet from a browser) draws the tree of
``cyborg/aio/fleet.yaml``; an ARQ bound through the API and a device put
in maintenance appear at the next refresh, without reloading the page. The
screenshot goes to ``$CYBORG_ARTIFACTS_DIR`` (default ``<repo>/.artifacts``)
as fleet.png.

Chromium is Debian's ``chromium`` (``tools/install.sh`` installs it): when
it is missing the test skips, and fails with ``CI=true``.
"""

import os
import pathlib
import shutil
import tempfile
import time
import uuid

from testtools import content

from cyborg.tests import base
from cyborg.tests.fixtures import processes
from cyborg.tests.functional.aio import chromium
from cyborg.tests.functional.aio import clients
from cyborg.tests.functional.aio import test_aio

REPOSITORY = pathlib.Path(__file__).resolve().parents[4]
# The default fleet's deployables, resource providers and attach handles.
DEPLOYABLES = len(test_aio.FLEET_TREE)
HANDLES = 13
# The page asks every second in this test (3 s by default).
PAGE_PATH = '/v2/fleet?refresh=1'
# The tree the page draws: [name, kind, parent name] of every node.
DRAWN_TREE = '''Array.from(document.querySelectorAll('li[data-kind]')).map(
    function (node) {
        var parent = node.parentElement.closest('li[data-kind]');
        return [node.dataset.name, node.dataset.kind,
                parent ? parent.dataset.name : null];
    })'''


def expected_kind(name, parent):
    """The kind the page shows for the default fleet's deployable ``name``."""
    if parent is None:
        return 'root'
    last = name.rsplit('-', 1)[1]
    if last.startswith('region'):
        return 'region'
    if last.startswith('pf'):
        return 'pf'
    if last.startswith('vf'):
        return 'vf'
    return 'vgpu_type'


def artifacts_dir():
    """Where screenshots go: $CYBORG_ARTIFACTS_DIR or <repo>/.artifacts."""
    directory = os.environ.get('CYBORG_ARTIFACTS_DIR') or str(
        REPOSITORY / '.artifacts')
    os.makedirs(directory, exist_ok=True)
    return directory


class TestFleetPage(base.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.binary = chromium.find_binary()
        if cls.binary is None:
            return
        cls.host = 'fleet-%s' % uuid.uuid4().hex[:8]
        cls.api_port = processes.free_port()
        cls.state_dir = tempfile.mkdtemp(prefix='cyborg-fleet-page-')
        cls.aio = processes.ServiceProcess('cyborg-aio', {
            'DEFAULT': {'host': cls.host},
            'api': {'port': cls.api_port},
            'aio': {'state_dir': cls.state_dir,
                    'placement_port': processes.free_port(),
                    'glance_port': processes.free_port()},
        })
        cls.aio.setUp()
        try:
            cls._wait_for_fleet()
        except BaseException:
            cls._stop()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.binary is not None:
            cls._stop()
        super().tearDownClass()

    @classmethod
    def _stop(cls):
        cls.aio.cleanUp()
        shutil.rmtree(cls.state_dir, ignore_errors=True)

    @classmethod
    def _wait_for_fleet(cls):
        deadline = time.monotonic() + clients.START_TIMEOUT
        while time.monotonic() < deadline:
            if not cls.aio.is_running():
                raise AssertionError('cyborg-aio exited:\n' + cls.aio.log())
            try:
                summary = clients.http_get(cls.api_port,
                                           '/v2/fleet').json()['summary']
                if summary['deployables'] == DEPLOYABLES and \
                        summary['attach_handles']['total'] == HANDLES:
                    return
            except (clients.requests.ConnectionError, ValueError, KeyError):
                pass
            time.sleep(0.3)
        raise AssertionError('the default fleet did not appear in GET '
                             '/v2/fleet:\n' + cls.aio.log())

    def setUp(self):
        super().setUp()
        if self.binary is None:
            if os.environ.get('CI') == 'true':
                self.fail('chromium is not installed (tools/install.sh '
                          'installs it)')
            self.skipTest('chromium is not installed')
        self.browser = chromium.Browser(self.binary)
        self.addCleanup(self.browser.close)
        self.addOnException(self._attach_chromium_output)

    def _attach_chromium_output(self, exc_info):
        self.addDetail('chromium', content.text_content(
            self.browser.output()))

    def _call(self, method, path, body=None, status=None):
        response = clients.http_call(method, self.api_port, path, body)
        if status is not None:
            self.assertEqual(status, response.status_code, response.text)
        return response

    def _deployable(self, name):
        rows = clients.http_get(self.api_port, '/v2/deployables').json()[
            'deployables']
        return [row for row in rows if row['name'] == name][0]

    def _bind_one_arq(self, region):
        """An ARQ bound to a new instance on ``region``: (arq, instance)."""
        profile = clients.unique_name('fleet-page')
        self._call('POST', '/v2/device_profiles', [
            {'name': profile, 'groups': clients.FPGA_GROUPS}], status=201)
        self.addCleanup(self._call, 'DELETE', '/v2/device_profiles/'
                        + profile)
        arq = self._call('POST', '/v2/accelerator_requests',
                         {'device_profile_name': profile},
                         status=201).json()['arqs'][0]['uuid']
        instance = str(uuid.uuid4())
        self.addCleanup(self._call, 'DELETE',
                        '/v2/accelerator_requests?instance=' + instance)
        rp = self._deployable(region)['rp_uuid']
        self._call('PATCH', '/v2/accelerator_requests', {
            arq: clients.bind_ops(self.host, instance, rp)}, status=202)
        deadline = time.monotonic() + clients.BIND_TIMEOUT
        while True:
            state = clients.http_get(
                self.api_port, '/v2/accelerator_requests/' + arq).json()[
                'state']
            if state != 'BindStarted' and state != 'Initial' or \
                    time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertEqual('Bound', state)
        return arq, instance

    def test_page_draws_the_fleet_and_follows_binds_and_maintenance(self):
        url = 'http://127.0.0.1:%d%s' % (self.api_port, PAGE_PATH)
        self.browser.navigate(url)
        self.browser.wait_for('document.body.dataset.refreshes >= 1')
        self.assertEqual('ok', self.browser.evaluate(
            'document.body.dataset.state'))

        # The tree of cyborg/aio/fleet.yaml, under one host.
        self.assertEqual([self.host], self.browser.evaluate(
            'Array.from(document.querySelectorAll("section[data-hostname]"))'
            '.map(function (host) { return host.dataset.hostname; })'))
        drawn = self.browser.evaluate(DRAWN_TREE)
        self.assertEqual(
            sorted([name, expected_kind(name, parent), parent]
                   for name, (parent, _root, _rp)
                   in test_aio.FLEET_TREE.items()),
            sorted(drawn))
        usage = self.browser.evaluate(
            'Object.fromEntries(Array.from(document.querySelectorAll('
            '"li[data-kind]")).filter(function (node) {'
            ' return node.querySelector(":scope > .line .usage"); })'
            '.map(function (node) {'
            ' var usage = node.querySelector(":scope > .line .usage");'
            ' return [node.dataset.name, usage.textContent]; }))')
        self.assertEqual({
            test_aio.INTEL + '-region0': '0 / 4 in use',
            test_aio.INTEL + '-region1': '0 / 2 in use',
            test_aio.XILINX + '-region0': '0 / 1 in use',
            test_aio.T4 + '-nvidia-222': '0 / 4 in use',
            test_aio.T4 + '-nvidia-223': '0 / 2 in use'}, usage)
        self.assertIn('function d8424dc4', self.browser.evaluate(
            'document.querySelector(\'li[data-name="%s-region0"]\')'
            '.textContent' % test_aio.INTEL))

        # A bind and a device in maintenance show at the next refresh; the
        # page is not loaded again (the marker stays).
        self.browser.evaluate('window.fleetTestMarker = "same page"')
        arq, instance = self._bind_one_arq(test_aio.INTEL + '-region0')
        xilinx = self._device_of(test_aio.XILINX)
        self._call('PATCH', '/v2/devices/' + xilinx, [
            {'path': '/status', 'op': 'replace', 'value': 'disabled',
             'reason': 'fan replacement'}], status=200)
        self.addCleanup(self._call, 'POST', '/v2/devices/%s/enable' % xilinx)
        self.browser.wait_for(
            'document.querySelector(\'li[data-arq-uuid="%s"]'
            '[data-state="Bound"][data-instance="%s"]\') && '
            'document.querySelector(\'article[data-uuid="%s"]'
            '[data-status="maintaining"]\')' % (arq, instance, xilinx))
        self.assertEqual('same page', self.browser.evaluate(
            'window.fleetTestMarker'))
        region = ('document.querySelector(\'li[data-name="%s-region0"] > '
                  '.line\')' % test_aio.INTEL)
        self.assertEqual('1 / 4 in use', self.browser.evaluate(
            region + '.querySelector(".usage .count").textContent'))
        self.assertEqual('ARQ ' + arq[:8], self.browser.evaluate(
            region + '.querySelector(".holder").textContent'))
        self.assertEqual('Disabled: fan replacement', self.browser.evaluate(
            'document.querySelector(\'article[data-uuid="%s"] .reason\')'
            '.textContent' % xilinx))
        self.assertEqual('1', self.browser.evaluate(
            'document.querySelector(\'section[data-state="Bound"] '
            '.arq-count\').textContent'))

        path = self.browser.screenshot(os.path.join(artifacts_dir(),
                                                    'fleet.png'))
        with open(path, 'rb') as image:
            self.assertEqual(b'\x89PNG', image.read(4))

    def _device_of(self, root_name):
        """The uuid of the device whose root deployable is ``root_name``."""
        fleet = clients.http_get(self.api_port, '/v2/fleet').json()
        return [device['uuid'] for host in fleet['hosts']
                for device in host['devices']
                if device['deployables'][0]['name'] == root_name][0]
