"""The api-ref's examples are real requests and answers of the API.

Every JSON file of ``api-ref/source/samples/`` is the body of a request this
test sends, or of the answer it gets, in one scenario against the real
application: noauth, SQLite, a real Placement and Glance, a conductor and
an agent (the fake driver, one Intel FPGA on ``compute-1``) reached by local
RPC dispatch. What changes from run to run is normalized the same way for
every file before it is compared or written: each uuid becomes a fixed
placeholder uuid (the same one wherever that uuid appears, so the examples
of a page refer to each other), each timestamp the same date and time (its
format kept) and the endpoint of links ``http://127.0.0.1:6666``.

The test fails when a checked-in sample differs from the normalized real
body, when an example of the api-ref is not a sample file this test
produces (a ``code-block:: json``, an unknown ``literalinclude``), or when
a ``code-block:: console`` shows a request it does not send. With
``CYBORG_REGENERATE_SAMPLES=1`` it rewrites the sample files instead.
"""

import difflib
import json
import os
import re
import uuid

import fixtures
import webob

from cyborg import conf
from cyborg import context as cyborg_context
from cyborg import objects
from cyborg import policies
from cyborg import rpc
from cyborg.agent import manager as agent_manager
from cyborg.agent import rpcapi as agent_rpcapi
from cyborg.agent.drivers import fake
from cyborg.api import app
from cyborg.clients import glance as glance_client
from cyborg.conductor import inventory_report
from cyborg.conductor import manager as conductor_manager
from cyborg.conductor import rpcapi as conductor_rpcapi
from cyborg.db.queries import deployables as deployable_queries
from cyborg.tests import base
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.fixtures import placement as placement_fixture

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..',
                                    '..', '..'))
API_REF = os.path.join(ROOT, 'api-ref', 'source')
SAMPLES = os.path.join(API_REF, 'samples')
REGENERATE = 'CYBORG_REGENERATE_SAMPLES'

# Requests go to BASE_URL; the samples show the documented endpoint.
BASE_URL = 'http://cyborg-api.test:8080'
ENDPOINT = 'http://127.0.0.1:6666'
HOST = 'compute-1'
CONDUCTOR = 'api-samples-conductor'
FLEET = """
fpgas:
  - vendor: "0x8086"
    vendor_name: intel
    board: pac_arria10
    model: "PAC Arria 10 GX"
    product_id: "0x09c4"
    regions:
      - vfs_per_pf: 1
        program: {result: success}
"""
FUNCTION = 'd8424dc4-a4a3-4c41-9f89-e433683f9040'
MICROVERSION = {'OpenStack-API-Version': 'accelerator 2.3'}
HISTORY_VERSION = {'OpenStack-API-Version': 'accelerator 2.5'}
FLEET_VERSION = {'OpenStack-API-Version': 'accelerator 2.6'}

UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                  r'[0-9a-f]{12}')
TIMESTAMP = re.compile(r'\d{4}-\d\d-\d\d([T ])\d\d:\d\d:\d\d(?:\.(\d+))?')
# Placeholder uuids: the n-th uuid met in the scenario becomes the n-th.
PLACEHOLDER_NAMESPACE = uuid.UUID('c7b0a9b4-3f2e-4d1c-8b5a-6e7f8091a2b3')
# The examples of the .inc files.
JSON_BLOCK = re.compile(r'^\.\. code-block:: json', re.MULTILINE)
INCLUDE = re.compile(r'^\.\. literalinclude:: samples/(\S+)$', re.MULTILINE)
CONSOLE_BLOCK = re.compile(
    r'^\.\. code-block:: console\n\n((?:   .*\n|\n)+)', re.MULTILINE)


class Normalizer:
    """Turns run-to-run values of a text into fixed placeholders."""

    def __init__(self):
        self._uuids = {}

    def _uuid(self, match):
        real = match.group(0)
        if real not in self._uuids:
            self._uuids[real] = str(uuid.uuid5(PLACEHOLDER_NAMESPACE,
                                               str(len(self._uuids))))
        return self._uuids[real]

    @staticmethod
    def _timestamp(match):
        separator, fraction = match.groups()
        text = '2026-11-22%s08:50:24' % separator
        if fraction is not None:
            text += '.' + '0' * len(fraction)
        return text

    def __call__(self, text):
        """``text`` with its uuids, timestamps and endpoint normalized."""
        text = text.replace(BASE_URL, ENDPOINT)
        text = UUID.sub(self._uuid, text)
        return TIMESTAMP.sub(self._timestamp, text)


class APISamplesTest(base.TestCase):
    """One scenario through every example of the api-ref."""

    def setUp(self):
        super().setUp()
        directory = self.useFixture(fixtures.TempDir()).path
        self.flags(auth_strategy='noauth')
        policies.reset()
        self.addCleanup(policies.reset)
        self.useFixture(database.Database(backend='sqlite',
                                          schema='migrations'))
        self.useFixture(placement_fixture.PlacementFixture())
        self.useFixture(glance_fixture.GlanceFixture())
        self.conductor = conductor_manager.ConductorManager(host=CONDUCTOR)
        rpc.register_local_endpoint(conductor_rpcapi.TOPIC, CONDUCTOR,
                                    self.conductor)
        self.addCleanup(rpc.unregister_local_endpoint,
                        conductor_rpcapi.TOPIC, CONDUCTOR)
        self._start_agent(directory)
        self.bitstream = self._bitstream(directory)
        self.application = app.setup_app()
        self.normalize = Normalizer()
        self.produced = {}
        self.requests = []

    def _start_agent(self, directory):
        path = os.path.join(directory, 'fleet.yaml')
        with open(path, 'w') as stream:
            stream.write(FLEET)
        agent = agent_manager.AgentManager(host=HOST, driver_names=[])
        agent.drivers = {'fake_driver': fake.FakeDriver(path, host=HOST)}
        rpc.register_local_endpoint(agent_rpcapi.TOPIC, HOST, agent)
        self.addCleanup(rpc.unregister_local_endpoint, agent_rpcapi.TOPIC,
                        HOST)
        inventory_report.apply(cyborg_context.get_admin_context(), HOST,
                               agent.collect_inventory())

    def _bitstream(self, directory):
        """A bitstream image in Glance for the host's FPGA region."""
        region = objects.Deployable.list(
            cyborg_context.get_admin_context(),
            filters={'num_accelerators': 1})[0]
        region_id = [value for item in region.attributes_list
                     for key, value in item.items() if key == 'region_id'][0]
        path = os.path.join(directory, 'aes.gbs')
        with open(path, 'wb') as data:
            data.write(b'\x01bitstream' * 100)
        image = glance_client.GlanceClient(conf.CONF).upload(path, 'aes', {
            'bs-name': 'aes', 'bs-uuid': str(uuid.uuid4()),
            'vendor': '0x8086', 'board': 'pac_arria10', 'version': '1', 'driver_ver': '1',
            'driver_path': '/opt/intel', 'function_uuid': FUNCTION,
            'region_uuid': region_id}, tags=('FPGA',))
        return image['id']

    # -- Requests and samples ----------------------------------------------

    def _send(self, method, path, body=None, headers=None, status=200,
              request_sample=None, response_sample=None):
        """Send one request; record it and the samples of its bodies."""
        headers = dict(headers or {})
        self.requests.append((method, self.normalize(path), headers))
        request = webob.Request.blank(path, method=method, headers=headers,
                                      base_url=BASE_URL)
        if body is not None:
            request.content_type = 'application/json'
            request.body = json.dumps(body).encode('utf-8')
            if request_sample:
                self._sample(request_sample, body)
        response = request.get_response(self.application)
        self.assertEqual(status, response.status_int,
                         '%s %s: %s' % (method, path, response.text))
        if response_sample:
            self._sample(response_sample, response.json_body)
        return response

    def _sample(self, name, body):
        self.assertNotIn(name, self.produced)
        self.produced[name] = self.normalize(
            json.dumps(body, indent=2, ensure_ascii=False)) + '\n'

    # -- The scenario, in the order of the api-ref -------------------------

    def _versions(self):
        self._send('GET', '/', response_sample='versions-list-resp.json')
        self._send('GET', '/v2', response_sample='version-v2-show-resp.json')
        self._send('GET', '/v2', headers={
            'OpenStack-API-Version': 'accelerator 2.99'}, status=406,
            response_sample='error-version-not-acceptable-resp.json')

    def _devices(self):
        devices = self._send(
            'GET', '/v2/devices?hostname=%s&limit=1' % HOST,
            headers=MICROVERSION,
            response_sample='devices-list-resp.json').json_body['devices']
        path = '/v2/devices/%s' % devices[0]['uuid']
        self._send('PATCH', path, headers=MICROVERSION, body=[
            {'path': '/status', 'op': 'replace', 'value': 'disabled',
             'reason': 'fan failure'}],
            request_sample='device-patch-req.json',
            response_sample='device-patch-resp.json')
        self._send('POST', path + '/enable')
        self._send('POST', path + '/drain', headers=FLEET_VERSION,
                   body={'reason': 'replace the fan'},
                   request_sample='device-drain-req.json',
                   response_sample='device-drain-resp.json')
        self._send('POST', path + '/undrain', headers=FLEET_VERSION)
        return devices[0]['uuid']

    def _deployables(self):
        regions = self._send(
            'GET', '/v2/deployables?attribute=rc:FPGA',
            response_sample='deployables-list-resp.json',
        ).json_body['deployables']
        self.assertEqual(1, len(regions))
        region = regions[0]
        self._send(
            'PATCH', '/v2/deployables/%s/program' % region['uuid'], body=[
                {'path': '/program', 'op': 'replace',
                 'value': [{'image_uuid': self.bitstream}]}],
            request_sample='deployable-program-req.json',
            response_sample='deployable-program-resp.json')
        return region

    def _attributes(self, region):
        row, _ = deployable_queries.get_by_uuid(
            cyborg_context.get_admin_context(), region['uuid'])
        self._send('GET', '/v2/attributes?deployable_id=%d&key=rc' % row.id,
                   response_sample='attributes-list-resp.json')
        self._send('POST', '/v2/attributes', status=201, body={
            'deployable_id': row.id, 'key': 'trait3',
            'value': 'CUSTOM_FPGA_GOLD'},
            request_sample='attribute-create-req.json',
            response_sample='attribute-create-resp.json')

    def _device_profiles(self):
        self._send('POST', '/v2/device_profiles', status=201, body=[{
            'name': 'fpga-small', 'description': 'one Intel FPGA',
            'groups': [{'resources:FPGA': '1',
                        'trait:CUSTOM_FPGA_INTEL': 'required',
                        'accel:bitstream_id': self.bitstream}]}],
            request_sample='device-profiles-create-req.json',
            response_sample='device-profiles-create-resp.json')
        self._send('GET', '/v2/device_profiles?name=fpga-small',
                   response_sample='device-profiles-list-resp.json')

    def _accelerator_requests(self, region):
        arq = self._send(
            'POST', '/v2/accelerator_requests', status=201,
            body={'device_profile_name': 'fpga-small'},
            request_sample='arqs-create-req.json',
            response_sample='arqs-create-resp.json').json_body['arqs'][0]
        self._send('PATCH', '/v2/accelerator_requests', status=202, body={
            arq['uuid']: [
                {'path': '/hostname', 'op': 'add', 'value': HOST},
                {'path': '/device_rp_uuid', 'op': 'add',
                 'value': region['rp_uuid']},
                {'path': '/instance_uuid', 'op': 'add',
                 'value': str(uuid.uuid4())}]},
            request_sample='arqs-bind-req.json')
        # The binder's threads are not started: it binds here, at once.
        self.conductor.binder.bind([arq['uuid']])
        bound = self._send(
            'GET', '/v2/accelerator_requests/%s' % arq['uuid'],
            headers=MICROVERSION, response_sample='arq-show-resp.json')
        self.assertEqual('Bound', bound.json_body['state'],
                         bound.json_body.get('state_reason'))

    def _histories(self, device_uuid, region):
        self._send('GET', '/v2/devices/%s/history?limit=2' % device_uuid,
                   headers=HISTORY_VERSION,
                   response_sample='device-history-list-resp.json')
        self._send('GET', '/v2/deployables/%s/history' % region['uuid'],
                   headers=HISTORY_VERSION,
                   response_sample='deployable-history-list-resp.json')
        # The ARQs that lose their accelerator if the card goes (2.6).
        self._send('GET', '/v2/accelerator_requests?device_uuid=%s'
                   % device_uuid, headers=FLEET_VERSION,
                   response_sample='arqs-list-by-device-resp.json')

    def _fleet(self):
        self._send('GET', '/v2/fleet',
                   headers={'Accept': 'application/json'},
                   response_sample='fleet-show-resp.json')

    def test_samples_are_real_answers(self):
        self._versions()
        device_uuid = self._devices()
        region = self._deployables()
        self._attributes(region)
        self._device_profiles()
        self._accelerator_requests(region)
        self._histories(device_uuid, region)
        self._fleet()
        problems = self._check_samples() + self._check_api_ref()
        self.assertEqual([], problems, '\n'.join(problems))

    # -- Checks --------------------------------------------------------------

    def _check_samples(self):
        """Problems of the checked-in samples (or rewrite them)."""
        regenerate = os.environ.get(REGENERATE) == '1'
        problems = []
        for name, text in sorted(self.produced.items()):
            path = os.path.join(SAMPLES, name)
            try:
                with open(path, encoding='utf-8') as stream:
                    checked_in = stream.read()
            except FileNotFoundError:
                checked_in = ''
            if checked_in == text:
                continue
            if regenerate:
                os.makedirs(SAMPLES, exist_ok=True)
                with open(path, 'w', encoding='utf-8') as stream:
                    stream.write(text)
                continue
            problems.append(
                'samples/%s differs from the real answer (%s=1 rewrites '
                'it):\n%s' % (name, REGENERATE, ''.join(difflib.unified_diff(
                    checked_in.splitlines(True), text.splitlines(True),
                    'checked-in', 'real'))))
        return problems

    def _check_api_ref(self):
        """Problems of the api-ref: examples that are no sample or request
        of this test."""
        sent = [_request_text(method, path, headers)
                for method, path, headers in self.requests]
        problems = []
        included = set()
        for name in sorted(os.listdir(API_REF)):
            if not name.endswith('.inc'):
                continue
            with open(os.path.join(API_REF, name), encoding='utf-8') as doc:
                text = doc.read()
            if JSON_BLOCK.search(text):
                problems.append('%s has a JSON code-block; examples are '
                                'sample files' % name)
            for sample in INCLUDE.findall(text):
                included.add(sample)
                if sample not in self.produced:
                    problems.append('%s includes samples/%s, which no '
                                    'request of this test produces'
                                    % (name, sample))
            for block in CONSOLE_BLOCK.findall(text):
                request = '\n'.join(line.strip()
                                     for line in block.strip().splitlines())
                if not any(_shows(request, real) for real in sent):
                    problems.append('%s shows a request this test does not '
                                    'send:\n%s' % (name, request))
        for sample in sorted(set(self.produced) - included):
            problems.append('samples/%s is included by no page' % sample)
        stale = set(os.listdir(SAMPLES)) - set(self.produced)
        for sample in sorted(stale):
            problems.append('samples/%s is no real answer of this test'
                            % sample)
        return problems


def _request_text(method, path, headers):
    return '\n'.join(['%s %s' % (method, path)] +
                     ['%s: %s' % item for item in sorted(headers.items())])


def _shows(documented, sent):
    """Whether ``documented`` (request line and headers) is ``sent``."""
    documented_lines = documented.splitlines()
    sent_lines = sent.splitlines()
    return (documented_lines[0] == sent_lines[0]
            and set(documented_lines[1:]) == set(sent_lines[1:]))
