"""The fleet page in headless Chromium against cyborg-aio's default fleet.

The all-in-one runs as README starts it: no config file, every default
(API on 6666, the fleet page on 6680, Placement on 8778, Glance on 9292),
so those ports must be free. The browser opens the page at the address
README gives, with Chromium's default port policy: it refuses the API's
port 6666 (``ERR_UNSAFE_PORT``, checked too) and opens the page's. The
page (GET /v2/fleet from a browser) draws the tree of
``cyborg/aio/fleet.yaml``; an ARQ bound through the API and a device put
in maintenance appear at the next refresh, without reloading the page. The
screenshot goes to ``$CYBORG_ARTIFACTS_DIR`` (default ``<repo>/.artifacts``)
as fleet.png.

Chromium is Debian's ``chromium`` (``tools/install.sh`` installs it): when
it is missing the test skips, and fails with ``CI=true``.
"""

import os
import pathlib
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid

import yaml
from testtools import content

from cyborg.tests import base
from cyborg.tests.fixtures import processes
from cyborg.tests.functional.aio import chromium
from cyborg.tests.functional.aio import clients
from cyborg.tests.functional.aio import test_aio

REPOSITORY = pathlib.Path(__file__).resolve().parents[4]
README = REPOSITORY / 'README.rst'
# The default fleet's deployables, resource providers and attach handles.
DEPLOYABLES = len(test_aio.FLEET_TREE)
HANDLES = 13
# The tree the page draws: [name, kind, parent name] of every node.
DRAWN_TREE = '''Array.from(document.querySelectorAll('li[data-kind]')).map(
    function (node) {
        var parent = node.parentElement.closest('li[data-kind]');
        return [node.dataset.name, node.dataset.kind,
                parent ? parent.dataset.name : null];
    })'''
SUMMARY = ('Array.from(document.querySelectorAll("#summary li")).map('
           'function (item) { return item.textContent; })')


def check_host_search(test, browser):
    """The page says which page of hosts it shows and searches them by
    name (one host here: one page)."""
    page_text = 'document.getElementById("page-text").textContent'
    test.assertEqual('Page 1: hosts 1\u20131 of 1 host',
                     browser.evaluate(page_text))
    test.assertTrue(browser.evaluate(
        'document.getElementById("page-next").disabled'))
    browser.evaluate(
        'document.getElementById("host-input").value = "no such host";'
        'document.getElementById("host-search").requestSubmit()')
    browser.wait_for('!document.querySelector("section[data-hostname]")')
    test.assertEqual('Page 1: no host of 1 host, name containing '
                     '\u201cno such host\u201d', browser.evaluate(page_text))
    browser.evaluate(
        'document.getElementById("host-input").value = "";'
        'document.getElementById("host-search").requestSubmit()')
    browser.wait_for('document.querySelector("section[data-hostname]")')


def readme_page_url():
    """The one address of the fleet page README gives."""
    urls = set(re.findall(r'http://127\.0\.0\.1:\d+/v2/fleet\b',
                          README.read_text(encoding='utf-8')))
    if len(urls) != 1:
        raise AssertionError('README gives %d addresses of the fleet page: '
                             '%s' % (len(urls), sorted(urls)))
    return urls.pop()


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
        cls.page_url = readme_page_url()
        cls.api_port = 6666
        cls.directory = tempfile.mkdtemp(prefix='cyborg-fleet-page-')
        cls.log_path = os.path.join(cls.directory, 'cyborg-aio.log')
        # As README starts it: no config file, the state in .aio of the
        # current directory.
        with open(cls.log_path, 'wb') as log_file:
            cls.process = subprocess.Popen(
                [processes.console_script('cyborg-aio')],
                stdin=subprocess.DEVNULL, stdout=log_file,
                stderr=subprocess.STDOUT, cwd=cls.directory,
                env={key: value for key, value in os.environ.items()
                     if key != 'CYBORG_AIO_STATE_DIR'},
                start_new_session=True)
        try:
            cls._wait_for_fleet()
            cls.host = clients.http_get(cls.api_port, '/v2/fleet').json()[
                'hosts'][0]['hostname']
        except BaseException:
            cls._stop()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.binary is not None:
            cls._stop()
        super().tearDownClass()

    @classmethod
    def _log(cls):
        return processes.read_log(cls.log_path)

    @classmethod
    def _stop(cls):
        if cls.process.poll() is None:
            os.killpg(cls.process.pid, signal.SIGTERM)
            try:
                cls.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(cls.process.pid, signal.SIGKILL)
                cls.process.wait()
        shutil.rmtree(cls.directory, ignore_errors=True)

    @classmethod
    def _wait_for_fleet(cls):
        deadline = time.monotonic() + clients.START_TIMEOUT
        while time.monotonic() < deadline:
            if cls.process.poll() is not None:
                raise AssertionError('cyborg-aio exited:\n' + cls._log())
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
                             '/v2/fleet:\n' + cls._log())

    def setUp(self):
        super().setUp()
        if self.binary is None:
            if os.environ.get('CI') == 'true':
                self.fail('chromium is not installed (tools/install.sh '
                          'installs it)')
            self.skipTest('chromium is not installed')
        self.browser = chromium.Browser(self.binary)
        self.addCleanup(self.browser.close)
        self.addOnException(self._attach_outputs)

    def _attach_outputs(self, exc_info):
        self.addDetail('chromium', content.text_content(
            self.browser.output()))
        self.addDetail('cyborg-aio-log', content.text_content(self._log()))

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

    def test_the_api_port_is_refused_by_the_browser(self):
        # Why the page has a port of its own: 6666 is on the browsers'
        # list of restricted ports.
        error = self.assertRaises(
            chromium.ProtocolError, self.browser.navigate,
            'http://127.0.0.1:%d/v2/fleet' % self.api_port)
        self.assertIn('ERR_UNSAFE_PORT', str(error))

    def test_page_draws_the_fleet_and_follows_binds_and_maintenance(self):
        self.browser.navigate(self.page_url)
        self.browser.wait_for('document.body.dataset.refreshes >= 1')
        self.assertEqual('ok', self.browser.evaluate(
            'document.body.dataset.state'))
        self.assertEqual(
            ['1 host', '3 devices', '%d deployables' % DEPLOYABLES,
             '0 / %d handles in use' % HANDLES, '0 bound ARQs'],
            self.browser.evaluate(SUMMARY))
        self.assertEqual(
            '3 devices \u00b7 0 / %d handles in use' % HANDLES,
            self.browser.evaluate(
                'document.querySelector(".host-count").textContent'))

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
        self.assertEqual(
            ['1 host', '3 devices', '%d deployables' % DEPLOYABLES,
             '1 / %d handles in use' % HANDLES, '1 bound ARQ',
             '1 in maintenance'],
            self.browser.evaluate(SUMMARY))
        check_host_search(self, self.browser)

        path = self.browser.screenshot(os.path.join(artifacts_dir(),
                                                    'fleet.png'))
        with open(path, 'rb') as image:
            self.assertEqual(b'\x89PNG', image.read(4))

    def _call26(self, method, path, body=None):
        """``method`` ``path`` at microversion 2.6; assert a 2xx."""
        response = clients.requests.request(
            method, 'http://127.0.0.1:%d%s' % (self.api_port, path),
            json=body, timeout=10,
            headers={'OpenStack-API-Version': 'accelerator 2.6'})
        self.assertLess(response.status_code, 300, response.text)
        return response

    def _script_health(self, root_name, health, reason):
        """Have the simulated card ``root_name`` report ``health`` from its
        next report on (the fleet file is read at every report)."""
        path = os.path.join(self.directory, '.aio', 'fleet.yaml')
        with open(path, encoding='utf-8') as fleet_file:
            original = fleet_file.read()
        self.addCleanup(pathlib.Path(path).write_text, original,
                        encoding='utf-8')
        fleet = yaml.safe_load(original)
        bus = int(root_name.split(':')[1], 16)
        entry = fleet['fpgas'][bus - 0x10]
        entry.update(health=health, health_reason=reason)
        pathlib.Path(path).write_text(yaml.safe_dump(fleet), encoding='utf-8')

    def test_page_shows_health_drain_and_history(self):
        # A drained region (no ARQ on it: drained at once) and a failed
        # card show at the next refresh, each device its newest history.
        region = self._deployable(test_aio.INTEL + '-region1')['uuid']
        self._call26('POST', '/v2/deployables/%s/drain' % region,
                     {'reason': 'fan replacement'})
        self.addCleanup(self._call26, 'POST',
                        '/v2/deployables/%s/undrain' % region)
        xilinx = self._device_of(test_aio.XILINX)
        self.addCleanup(self._call26, 'POST',
                        '/v2/devices/%s/clear_health' % xilinx)
        self._script_health(test_aio.XILINX, 'failed', 'scripted fault')
        self.browser.navigate(self.page_url)
        card = 'document.querySelector(\'article[data-uuid="%s"]\')'
        self.browser.wait_for(
            (card % xilinx) + '?.dataset.health === "failed" && '
            'document.querySelector(\'li[data-uuid="%s"]\')?.dataset.drain'
            ' === "drained"' % region, timeout=45)

        self.assertTrue(self.browser.evaluate(
            (card % xilinx) + '.querySelector(".health-reason").textContent'
            '.startsWith("Failed: scripted fault (since ")'))
        self.assertEqual('failed', self.browser.evaluate(
            (card % xilinx) + '.querySelector(".device-head .tag.health")'
            '.textContent'))
        node = 'document.querySelector(\'li[data-uuid="%s"] > .line\')' % \
            region
        self.assertEqual('drained', self.browser.evaluate(
            node + '.querySelector(".tag.drain").textContent'))
        intel = self._device_of(test_aio.INTEL)
        self.assertEqual(['', 'healthy'], self.browser.evaluate(
            '[%s.dataset.drain, %s.dataset.health]'
            % (card % intel, card % intel)))
        # The drain is the Intel card's newest entry, with its reason.
        self.assertEqual(['drain', 'ok', 'fan replacement'],
                         self.browser.evaluate(
            '(function (entry) { return [entry.dataset.event, '
            'entry.dataset.outcome, entry.querySelector(".why")'
            '.textContent]; })(%s.querySelector(".history li"))'
            % (card % intel)))
        summary = self.browser.evaluate(SUMMARY)
        self.assertIn('1 drained', summary)
        self.assertTrue([item for item in summary
                         if item.endswith(' failed')], summary)

        path = self.browser.screenshot(os.path.join(artifacts_dir(),
                                                    'fleet-health.png'))
        with open(path, 'rb') as image:
            self.assertEqual(b'\x89PNG', image.read(4))

    def _device_of(self, root_name):
        """The uuid of the device whose root deployable is ``root_name``."""
        fleet = clients.http_get(self.api_port, '/v2/fleet').json()
        return [device['uuid'] for host in fleet['hosts']
                for device in host['devices']
                if device['deployables'][0]['name'] == root_name][0]
