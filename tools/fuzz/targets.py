"""The deployments the API is fuzzed on, the data they are seeded with and
the checks made after a run.

``AllInOne`` runs ``cyborg-aio`` as a process with its embedded defaults
(SQLite, the ``fake://`` transport, noauth, the embedded Placement and
Glance, the simulated fleet) on free ports and a temporary state
directory. ``Processes`` is the deployment of upstream's API tests
(``tools/tempest/deploy.py``: cyborg-conductor, -api and -agent over
RabbitMQ, a fresh MariaDB database and virtual host, Keystone and
Placement), its API in noauth mode or behind Keystone. Both are fixtures.
"""

import copy
import os
import sys
import time
import uuid

import fixtures
import jsonschema
import requests

from cyborg.api import microversions
from cyborg.api.schemas import routes
from cyborg.tests.fixtures import glance
from cyborg.tests.fixtures import processes

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'tempest'))
import deploy  # noqa: E402  (tools/tempest/deploy.py)

START_TIMEOUT = 90
REQUEST_TIMEOUT = 30
LATEST = '%s latest' % microversions.SERVICE_TYPE
# The rows ``seed`` creates; the device profile names are the fuzzer's.
PROFILES = (
    {'name': 'fuzz-fpga', 'description': 'seeded by tools/fuzz',
     'groups': [{'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL': 'required'}]},
    {'name': 'fuzz-vgpu', 'groups': [{'resources:VGPU': '1'}]},
)
ARQS_PER_PROFILE = 2
SEEDED_KEY = 'fuzz-seeded'
# Keys of attributes every seeded deployment has (the fake driver's rc).
ATTRIBUTE_KEYS = (SEEDED_KEY, 'rc')
# Collections whose item path is ``/v2/<collection>/{...}``.
_ITEM_KEYS = {'devices': 'devices', 'deployables': 'deployables',
              'attributes': 'attributes', 'device_profiles': 'device_profiles',
              'accelerator_requests': 'arqs'}


class Target:
    """What the runner needs of a deployment: its API and its logs."""

    name = ''
    api_root = ''
    headers = {}

    def log_texts(self):
        """{file name: text} of the deployment's logs so far."""
        raise NotImplementedError


class AllInOne(fixtures.Fixture, Target):
    """``cyborg-aio`` as one process, as ``tools/aio.sh`` runs it."""

    name = 'all-in-one'

    def _setUp(self):
        state_dir = self.useFixture(fixtures.TempDir()).path
        api_port = processes.free_port()
        self.api_root = 'http://127.0.0.1:%d' % api_port
        self.headers = {}
        options = {
            'DEFAULT': {'debug': False},
            'aio': {'state_dir': state_dir,
                    'placement_port': processes.free_port(),
                    'glance_port': processes.free_port()},
            'api': {'port': api_port,
                    'fleet_page_port': processes.free_port()},
        }
        self.service = self.useFixture(processes.ServiceProcess(
            'cyborg-aio', options))
        processes.wait_until(lambda: has_devices(self), 'devices listed by '
                             'the all-in-one', [self.service], START_TIMEOUT)

    def log_texts(self):
        return {'cyborg-aio.log': self.service.log()}


class Processes(deploy.Deployment, Target):
    """cyborg-api, -conductor and -agent (``deploy.Deployment``); the API
    in noauth mode, or behind Keystone with ``start(keystone=True)``."""

    name = 'processes'

    def __init__(self, backend='mysql'):
        super().__init__(backend=backend)
        self.auth_strategy = 'noauth'
        self.headers = {}

    def _setUp(self):
        super()._setUp()
        self.api_root = self.api_url.rsplit('/v2', 1)[0]
        # Programming asks Glance (the conductor) and fetches the image
        # (the agent); upstream's API tests never program.
        self.glance = self.useFixture(glance.GlanceFixture())

    def _configs(self, enforce_new_defaults):
        conductor, api, agent = super()._configs(enforce_new_defaults)
        api['DEFAULT']['auth_strategy'] = self.auth_strategy
        for config in (conductor, agent):
            config['glance'] = {'auth_type': 'none',
                                'endpoint_override': self.glance.endpoint}
        return conductor, api, agent

    def start_api(self, keystone=False):
        """Start the services, the API behind Keystone or not; in the
        first case ``headers`` carry a token of the ``cyborg`` service
        user (roles admin and service) as the user's and the service's."""
        self.auth_strategy = 'keystone' if keystone else 'noauth'
        self.name = 'processes+%s (%s)' % (self.auth_strategy, self.backend)
        self.start(enforce_new_defaults=False)
        self.headers = {}
        if keystone:
            token = self.keystone.session(
                self.keystone.service_account('cyborg')).get_token()
            self.headers = {'X-Auth-Token': token,
                            'X-Service-Token': token}

    def log_texts(self):
        # ``logs`` keeps those of the services stopped already.
        texts = {}
        for script, logs in self.logs.items():
            for number, text in enumerate(logs, 1):
                texts['%s-%d.log' % (script, number)] = text
        for service in self._services:
            texts['%s-%d.log' % (service.script, len(
                self.logs.get(service.script, ())) + 1)] = service.log()
        return texts


def _get(target, path, version=LATEST, **params):
    headers = dict(target.headers)
    if version:
        headers[microversions.HEADER] = version
    return requests.get(target.api_root + path, headers=headers,
                        params=params, timeout=REQUEST_TIMEOUT)


def _send(target, method, path, body=None, params=None):
    headers = dict(target.headers, **{microversions.HEADER: LATEST})
    response = requests.request(method, target.api_root + path,
                                headers=headers, json=body, params=params,
                                timeout=REQUEST_TIMEOUT)
    if response.status_code >= 300:
        raise RuntimeError('seeding: %s %s answered %d: %s' % (
            method, path, response.status_code, response.text[:500]))
    return response.json() if response.content else None


def has_devices(target):
    """Whether the API answers and lists the agent's devices."""
    try:
        response = _get(target, '/v2/devices')
    except requests.RequestException:
        return False
    return response.status_code == 200 and bool(response.json()['devices'])


def seed(target):
    """Create device profiles, ARQs and an attribute; {collection: [ref]}:
    a few uuids (names for profiles) per collection, for the examples of
    the item paths."""
    _send(target, 'POST', '/v2/device_profiles',
          [dict(profile, name='%s-%s' % (profile['name'],
                                          uuid.uuid4().hex[:8]))
           for profile in PROFILES])
    profiles = _get(target, '/v2/device_profiles').json()['device_profiles']
    arqs = []
    for profile in profiles:
        for _ in range(ARQS_PER_PROFILE):
            arqs += _send(target, 'POST', '/v2/accelerator_requests',
                          {'device_profile_name': profile['name']})['arqs']
    deployables = _get(target, '/v2/deployables').json()['deployables']
    root_ids = sorted({row['root_id'] for row in deployables
                       if row['root_id'] is not None})
    attribute = _send(target, 'POST', '/v2/attributes', {
        'deployable_id': root_ids[0], 'key': SEEDED_KEY,
        'value': 'seeded by tools/fuzz'})
    devices = _get(target, '/v2/devices').json()['devices']
    return {
        'devices': [row['uuid'] for row in devices],
        'deployables': [row['uuid'] for row in deployables],
        'attributes': [attribute['uuid']],
        'device_profiles': [row['name'] for row in profiles]
        + [row['uuid'] for row in profiles],
        'accelerator_requests': [row['uuid'] for row in arqs],
    }


def _examples(values):
    return {'seeded%d' % number: {'value': value}
            for number, value in enumerate(values[:3])}


def with_examples(document, seeded):
    """A copy of the OpenAPI ``document`` whose item paths' first path
    parameter has the seeded rows as ``examples`` (and ``{key}`` the
    seeded attribute's key and ``rc``), so that generated requests reach
    real rows too (the schemas are unchanged)."""
    document = copy.deepcopy(document)
    for path, operations in document['paths'].items():
        parts = path.split('/')
        if len(parts) < 4 or parts[1] != 'v2' or \
                parts[2] not in seeded or not parts[3].startswith('{'):
            continue
        examples = {parts[3].strip('{}'): _examples(seeded[parts[2]]),
                    'key': _examples(ATTRIBUTE_KEYS)}
        for operation in operations.values():
            for parameter in operation.get('parameters', ()):
                if parameter.get('in') == 'path' and \
                        parameter.get('name') in examples:
                    parameter['examples'] = examples[parameter['name']]
    return document


def _schema_of(document, path, status=200):
    """A validator of the answer ``status`` of GET ``path`` in ``document``."""
    answer = document['paths'][path]['get']['responses'][str(status)]
    reference = answer['content']['application/json']['schema']['$ref']
    components = document['components']['schemas']
    # The component, with the others where its $refs point.
    schema = dict(components[reference.rsplit('/', 1)[1]],
                  components={'schemas': components})
    return jsonschema.Draft202012Validator(schema)


def _problem(response, version, validator):
    """What is wrong with one answer of a read, or None."""
    if response.status_code != 200:
        return '%s answered %d: %s' % (version, response.status_code,
                                       response.text[:300])
    try:
        body = response.json()
    except ValueError:
        return '%s answered no JSON: %s' % (version, response.text[:300])
    error = jsonschema.exceptions.best_match(validator.iter_errors(body))
    if error is not None:
        return '%s does not match the document at %s: %s' % (
            version, '/'.join(str(part) for part in error.absolute_path),
            error.message[:300])
    return None


def check_stored(target, document, max_pages=20, max_items=200):
    """Read back what the run left: every page of every list, and each
    listed item, at the oldest and newest microversion; a list of problems
    (none when each answered 200 with a body the ``document`` declares)."""
    problems = []
    oldest = '%s %s' % (microversions.SERVICE_TYPE,
                        microversions.MIN_VERSION)
    for route in routes.ROUTES:
        if route.method != 'GET' or '{' in route.path or route.query is None:
            continue
        name = route.path.rsplit('/', 1)[-1]
        if name not in _ITEM_KEYS:
            # Not a collection of items one can GET (the fleet's data,
            # paged by host since it can hold 10,000 of them).
            continue
        key = _ITEM_KEYS[name]
        item_path = next(path for path in document['paths']
                         if path.startswith(route.path + '/{')
                         and path.count('/') == route.path.count('/') + 1)
        list_schema = _schema_of(document, route.path)
        item_schema = _schema_of(document, item_path)
        for version in (oldest, LATEST):
            headers = dict(target.headers, **{microversions.HEADER: version})
            url, uuids = target.api_root + route.path, []
            for _ in range(max_pages):
                response = requests.get(url, headers=headers,
                                        timeout=REQUEST_TIMEOUT)
                problem = _problem(response, version, list_schema)
                if problem:
                    problems.append('GET %s: %s' % (url, problem))
                    break
                uuids += [row['uuid'] for row in response.json()[key]]
                url = response.json().get('next')
                if not url:
                    break
            for uuid_value in uuids[:max_items]:
                url = target.api_root + item_path.split('{')[0] + uuid_value
                problem = _problem(requests.get(
                    url, headers=headers, timeout=REQUEST_TIMEOUT), version,
                    item_schema)
                if problem:
                    problems.append('GET %s: %s' % (url, problem))
    return problems


def fetch_document(target):
    """The OpenAPI document the deployment serves (no token needed)."""
    deadline = time.monotonic() + REQUEST_TIMEOUT
    while True:
        try:
            response = requests.get(target.api_root + routes.OPENAPI_PATH,
                                    timeout=REQUEST_TIMEOUT)
            response.raise_for_status()
            return response.json()
        except requests.RequestException:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)
