"""Real OpenStack clients against cyborg-aio: what an operator sees.

One ``cyborg-aio`` process serves the whole class: a simulated fleet of two
FPGAs and one GPU (``[agent] fake_inventory``), no Keystone, and
``[api] max_limit = 2``, so that every listing spans pages as a large
fleet's does (the default page holds 1000 rows) and each client must follow
them. The same devices and deployables must come out of a plain HTTP GET,
``openstack accelerator ...`` (both implementations, below) and
openstacksdk's ``conn.accelerator``; device profiles and ARQs go through
their whole life with each client.

Two implementations answer to ``openstack accelerator ...``.
python-openstackclient 10.5 ships its own accelerator commands and lists
``cyborgclient.osc.v2`` in its ``IGNORED_MODULES``, so the ``openstack``
script runs OpenStackClient's commands, not python-cyborgclient's.
``CLI_CYBORGCLIENT`` runs the same shell with that choice swapped, which is
what ``openstack accelerator ...`` was with an older OpenStackClient: tests
name the one they use (``client=``). The differences that matter here:

* ``arq bind``: python-cyborgclient takes ``<arq> <host> <instance> <rp>
  <project>`` (the project is required but not sent); OpenStackClient takes
  ``<arq> <host> <server> <rp>`` and first asks Nova for the server
  (``GET /v2.1/servers/{id}``), which ``FakeNova`` answers.
* ``device profile create``: OpenStackClient takes ``--group k=v,...`` and
  warns that the JSON positional argument is deprecated.

Endpoint forms, found by trying them (openstacksdk 4.22, keystoneauth1
5.18, python-openstackclient 10.5, python-cyborgclient 3.0):

* ``openstack --os-auth-type none --os-endpoint URL accelerator ...`` and
  ``openstack.connection.Connection(auth_type='none',
  accelerator_endpoint_override=URL)`` both work with URL
  ``http://127.0.0.1:<port>/``, ``http://127.0.0.1:<port>`` or
  ``http://127.0.0.1:<port>/v2``: keystoneauth reads the version document
  (``GET /`` or ``GET /v2``) and continues at its ``self`` link,
  ``http://127.0.0.1:<port>/v2``, which is why that link must not carry
  upstream's literal ``/accelerator``.
* Without ``--os-accelerator-api-version`` both CLIs send
  ``OpenStack-API-Version: accelerator 2.0``, although python-cyborgclient's
  plugin names 2.3 as its default. So ``device list --long`` shows
  ``status`` empty, and ``device profile show <name>`` is refused (406),
  unless a version is asked for. openstacksdk sends no version header (so
  gets 2.0) unless ``accelerator_default_microversion`` is given.
* openstacksdk pages with ``limit``: it follows the ``next`` link of a
  full page and, after the last one, asks once more with a marker of its
  own; every device comes back once. (Its debug log prints the follow-up
  URLs as ``limit=['1']``, a quirk of the log only: the request is
  ``limit=1``.)
* The all-in-one has no Keystone (``noauth``): every request is an
  administrator's with a service token, which ``arq bind``/``unbind`` and
  deleting a bound ARQ need.

To check another resource, add its expected rows next to ``FLEET`` and a
test using ``openstack()``, ``sdk()``, ``http_get()`` and ``http_list()``.
"""

import http.server
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import openstack
import requests
from testtools import content
from testtools import content_type

from cyborg.tests import base
from cyborg.tests.fixtures import processes

START_TIMEOUT = 90
# Rows per page: smaller than every listing of the fleet.
MAX_LIMIT = 2
CLI_TIMEOUT = 120
# How long a bind may take to resolve.
BIND_TIMEOUT = 60

# The two implementations of ``openstack accelerator ...``: the
# ``openstack`` script (OpenStackClient's own commands) and the same shell
# with python-cyborgclient's commands instead.
CLI_OPENSTACKCLIENT = 'openstackclient'
CLI_CYBORGCLIENT = 'cyborgclient'
CYBORGCLIENT_SHELL = """
import sys
from openstackclient import shell
shell.IGNORED_MODULES = tuple(
    name for name in shell.IGNORED_MODULES
    if name != 'cyborgclient.osc.v2') + ('openstackclient.accelerator.v2',)
sys.exit(shell.main(sys.argv[1:]))
"""

# The simulated fleet; "{host}" becomes the all-in-one's host name.
FLEET = """
fpgas:
  - count: 2
    vendor: "0x8086"
    vendor_name: intel
    model: "PAC Arria 10 on {host}"
    regions:
      - pfs: 1
        vfs_per_pf: 2
gpus:
  - count: 1
    model: "Tesla T4"
"""


def expected_devices(host):
    """(type, vendor, model, hostname) of each device FLEET describes."""
    fpga = ('FPGA', '0x8086', 'PAC Arria 10 on %s' % host, host)
    return sorted([fpga, fpga, ('GPU', '0x10de', 'Tesla T4', host)])


# (name, num_accelerators) of each deployable: per FPGA the card's root
# (none of its own), below it a region with one accelerator per VF, below
# that its PF and below the PF its two VFs (none of their own); the GPU
# whole, its own root.
EXPECTED_DEPLOYABLES = sorted(
    [(root, 0) for root in ('fpga-0000:10:00.0', 'fpga-0000:11:00.0')]
    + [(root + '-region0', 2) for root in ('fpga-0000:10:00.0',
                                           'fpga-0000:11:00.0')]
    + [(root + suffix, 0) for root in ('fpga-0000:10:00.0',
                                       'fpga-0000:11:00.0')
       for suffix in ('-region0-pf0', '-region0-pf0-vf0',
                      '-region0-pf0-vf1')]
    + [('gpu-0000:12:00.0', 1)])
# name -> (parent, root) of each deployable, by name; None for a root.
EXPECTED_TREE = {'gpu-0000:12:00.0': (None, None)}
for _root in ('fpga-0000:10:00.0', 'fpga-0000:11:00.0'):
    EXPECTED_TREE.update({
        _root: (None, None),
        _root + '-region0': (_root, _root),
        _root + '-region0-pf0': (_root + '-region0', _root),
        _root + '-region0-pf0-vf0': (_root + '-region0-pf0', _root),
        _root + '-region0-pf0-vf1': (_root + '-region0-pf0', _root),
    })

# A device profile asking for one region of the simulated FPGAs.
FPGA_GROUPS = [{'resources:FPGA': '1', 'trait:CUSTOM_FAKE_DEVICE': 'required'}]
# The attach handle of a bound ARQ on the simulated FPGA.
PCI_KEYS = ['bus', 'device', 'domain', 'function']
ARQ_FIELDS = ('uuid', 'state', 'device_profile_name', 'hostname',
              'device_rp_uuid', 'instance_uuid', 'attach_handle_type',
              'attach_handle_info')
PROFILE_FIELDS = ('uuid', 'name', 'description', 'groups')

# The fields a device shows (2.0) and a deployable shows, links aside.
DEVICE_FIELDS = ('uuid', 'type', 'vendor', 'model', 'std_board_info',
                 'vendor_board_info', 'hostname', 'created_at', 'updated_at')
DEPLOYABLE_FIELDS = ('uuid', 'name', 'num_accelerators', 'device_id',
                     'parent_id', 'root_id', 'created_at', 'updated_at')


class TestClients(base.TestCase):
    """The fleet through curl, the openstack CLI and openstacksdk."""

    aio = None
    nova = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.directory = tempfile.mkdtemp(prefix='cyborg-clients-')
        cls.host = 'clients-%s' % uuid.uuid4().hex[:8]
        cls.nova = FakeNova()
        cls.clouds_yaml = os.path.join(cls.directory, 'clouds.yaml')
        with open(cls.clouds_yaml, 'w') as clouds_file:
            json.dump({'clouds': {'aio': {
                'auth_type': 'none',
                'compute_endpoint_override': cls.nova.url}}}, clouds_file)
        cls.api_port = processes.free_port()
        cls.state_dir = os.path.join(cls.directory, 'state')
        fleet_path = os.path.join(cls.directory, 'fleet.yaml')
        with open(fleet_path, 'w') as fleet_file:
            fleet_file.write(FLEET)
        cls.aio = processes.ServiceProcess('cyborg-aio', {
            'DEFAULT': {'host': cls.host},
            'api': {'port': cls.api_port, 'max_limit': MAX_LIMIT},
            'aio': {'state_dir': cls.state_dir,
                    'placement_port': processes.free_port()},
            'agent': {'fake_inventory': fleet_path},
        })
        try:
            cls.aio.setUp()
            cls._wait_for_fleet()
        except BaseException:
            cls._stop()
            raise

    @classmethod
    def tearDownClass(cls):
        cls._stop()
        super().tearDownClass()

    @classmethod
    def _stop(cls):
        if cls.aio is not None:
            cls.aio.cleanUp()
        if cls.nova is not None:
            cls.nova.stop()
        shutil.rmtree(cls.directory, ignore_errors=True)

    @classmethod
    def _wait_for_fleet(cls):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if not cls.aio.is_running():
                raise AssertionError('cyborg-aio exited with %s:\n%s' % (
                    cls.aio.process.returncode, cls.aio.log()))
            try:
                devices = http_get(cls.api_port, '/v2/devices').json()
                # A full first page: the report is one transaction.
                if len(devices['devices']) == MAX_LIMIT:
                    return
            except (requests.ConnectionError, ValueError, KeyError):
                pass
            time.sleep(0.3)
        raise AssertionError('the fleet did not appear in GET /v2/devices '
                             'within %d s:\n%s' % (START_TIMEOUT,
                                                   cls.aio.log()))

    def setUp(self):
        super().setUp()
        self.addDetail('cyborg-aio-log', content.Content(
            content_type.UTF8_TEXT, lambda: [self.aio.log().encode('utf-8')]))
        self.endpoint = 'http://127.0.0.1:%d/' % self.api_port

    # -- Helpers -------------------------------------------------------

    def http_get(self, path, version=None):
        """GET ``path`` of the API; assert a 200; return the JSON body."""
        response = http_get(self.api_port, path, version)
        self.assertEqual(200, response.status_code, response.text)
        return response.json()

    def http_list(self, resource, version=None):
        """Every row of GET /v2/``resource``, following ``next`` links."""
        rows, path, pages = [], '/v2/%s' % resource, 0
        while path:
            body = self.http_get(path, version)
            self.assertLessEqual(len(body[resource]), MAX_LIMIT)
            rows += body[resource]
            pages += 1
            path = body.get('next')
            if path:
                self.assertTrue(path.startswith(self.endpoint + 'v2/'), path)
                path = path[len(self.endpoint) - 1:]
        self.assertGreater(pages, 1)
        return rows

    def openstack(self, *arguments, endpoint=None, api_version=None,
                  client=CLI_OPENSTACKCLIENT, output=True):
        """Run ``openstack ...`` against the all-in-one.

        ``client`` names the implementation of the accelerator commands
        (``CLI_OPENSTACKCLIENT`` or ``CLI_CYBORGCLIENT``). With ``output``,
        ``-f json`` is added and the parsed JSON returned; else the
        standard output.
        """
        if client == CLI_CYBORGCLIENT:
            command = [sys.executable, '-c', CYBORGCLIENT_SHELL]
        else:
            command = [processes.console_script('openstack')]
        # The cloud "aio" of clouds.yaml only names FakeNova for the
        # compute service; the accelerator is --os-endpoint.
        command += ['--os-cloud', 'aio', '--os-auth-type', 'none',
                    '--os-endpoint', endpoint or self.endpoint]
        if api_version:
            command += ['--os-accelerator-api-version', api_version]
        command += list(arguments)
        if output:
            command += ['-f', 'json']
        # A developer's OS_* variables (OS_CLOUD, OS_AUTH_URL) must not
        # point the client elsewhere.
        environment = {name: value for name, value in os.environ.items()
                       if not name.startswith('OS_')}
        environment['OS_CLIENT_CONFIG_FILE'] = self.clouds_yaml
        result = subprocess.run(command, stdin=subprocess.DEVNULL,
                                capture_output=True, text=True,
                                timeout=CLI_TIMEOUT, env=environment)
        self.assertEqual(0, result.returncode,
                         'openstack %s (%s) failed:\n%s%s' % (
                             ' '.join(arguments), client, result.stdout,
                             result.stderr))
        return json.loads(result.stdout) if output else result.stdout

    def sdk(self, endpoint=None, microversion=None):
        """An openstacksdk Connection to the all-in-one, without Keystone."""
        options = {}
        if microversion:
            options['accelerator_default_microversion'] = microversion
        connection = openstack.connection.Connection(
            auth_type='none',
            accelerator_endpoint_override=endpoint or self.endpoint,
            **options)
        self.addCleanup(connection.close)
        return connection

    def assert_rows_match(self, reference, rows, fields, every=True):
        """``rows`` (dicts) show the ``fields`` of ``reference`` (API bodies).

        Rows are paired by uuid; both sides must hold the same uuids, or,
        unless ``every``, each row's uuid must be in ``reference``.
        """
        by_uuid = {row['uuid']: row for row in reference}
        if every:
            self.assertEqual(sorted(by_uuid),
                             sorted(row['uuid'] for row in rows))
        else:
            self.assertLessEqual({row['uuid'] for row in rows}, set(by_uuid))
        for row in rows:
            expected = by_uuid[row['uuid']]
            self.assertEqual({field: expected[field] for field in fields},
                             {field: row[field] for field in fields})

    def arqs_over_http(self, query=''):
        """Every ARQ of GET /v2/accelerator_requests``query``, all pages."""
        rows, path = [], '/v2/accelerator_requests' + query
        while path:
            body = self.http_get(path)
            rows += body['arqs']
            path = body.get('next')
            if path:
                path = path[len(self.endpoint) - 1:]
        return rows

    def region_rp(self, region):
        """The resource provider uuid of the deployable named ``region``."""
        rps = [deployable['rp_uuid']
               for deployable in self.deployables_over_http()
               if deployable['name'] == region]
        self.assertEqual(1, len(rps), region)
        self.assertIsNotNone(rps[0])
        return rps[0]

    def create_profile_over_http(self, name, groups=FPGA_GROUPS):
        response = http_call('POST', self.api_port, '/v2/device_profiles',
                             body=[{'name': name, 'groups': groups}])
        self.assertEqual(201, response.status_code, response.text)
        self.addCleanup(http_call, 'DELETE', self.api_port,
                        '/v2/device_profiles/%s' % name)
        return response.json()

    def create_arqs_over_http(self, profile_name):
        response = http_call('POST', self.api_port,
                             '/v2/accelerator_requests',
                             body={'device_profile_name': profile_name})
        self.assertEqual(201, response.status_code, response.text)
        return response.json()['arqs']

    def bind_over_http(self, arq_uuids, instance, rp):
        """Bind ARQs to ``instance`` in one request, as Nova does."""
        response = http_call('PATCH', self.api_port,
                             '/v2/accelerator_requests',
                             body={arq: bind_ops(self.host, instance, rp)
                                   for arq in arq_uuids})
        self.assertEqual(202, response.status_code, response.text)

    def delete_instance_arqs(self, instance):
        """Delete the ARQs of ``instance`` (cleanup; Nova's delete call)."""
        response = http_call('DELETE', self.api_port,
                             '/v2/accelerator_requests?instance=%s' % instance)
        self.assertEqual(204, response.status_code, response.text)

    def wait_resolved(self, instance):
        """The ARQs of ``instance`` once none of them is still binding."""
        path = ('/v2/accelerator_requests?instance=%s&bind_state=resolved'
                % instance)
        deadline = time.monotonic() + BIND_TIMEOUT
        while True:
            response = http_get(self.api_port, path)
            if response.status_code == 200:
                return response.json()['arqs']
            self.assertEqual(423, response.status_code, response.text)
            if time.monotonic() > deadline:
                self.fail('the ARQs of %s did not resolve within %d s: %s'
                          % (instance, BIND_TIMEOUT, self.arqs_over_http(
                              '?instance=%s' % instance)))
            time.sleep(0.1)

    def wait_state(self, arq_uuid, state):
        """The ARQ over HTTP once it is in ``state``."""
        deadline = time.monotonic() + BIND_TIMEOUT
        while True:
            arq = self.http_get('/v2/accelerator_requests/%s' % arq_uuid)
            if arq['state'] == state or time.monotonic() > deadline:
                self.assertEqual(state, arq['state'], arq)
                return arq
            time.sleep(0.1)

    def assert_bound(self, arq, instance, rp):
        """``arq`` (an API body) is Bound to a fake PCI function of ``rp``."""
        self.assertEqual(
            ('Bound', self.host, rp, instance, 'TEST_PCI'),
            (arq['state'], arq['hostname'], arq['device_rp_uuid'],
             arq['instance_uuid'], arq['attach_handle_type']), arq)
        self.assertEqual(PCI_KEYS, sorted(arq['attach_handle_info']), arq)
        self.assertTrue(uuid.UUID(arq['attach_handle_uuid']), arq)

    def assert_unbound(self, arq):
        self.assertEqual(
            ('Unbound', None, None, None, '', None, {}),
            (arq['state'], arq['hostname'], arq['device_rp_uuid'],
             arq['instance_uuid'], arq['attach_handle_type'],
             arq['attach_handle_uuid'], arq['attach_handle_info']), arq)

    def assert_handle_free(self, rp, handle):
        """Two new ARQs of one instance bind to region ``rp`` (which has two
        handles) and one of them takes ``handle``: it was free again."""
        profile = self.create_profile_over_http(unique_name('pair'), [
            {'resources:FPGA': '2', 'trait:CUSTOM_FAKE_DEVICE': 'required'}])
        arqs = self.create_arqs_over_http(profile['name'])
        self.assertEqual(2, len(arqs))
        instance = str(uuid.uuid4())
        self.addCleanup(self.delete_instance_arqs, instance)
        self.bind_over_http([arq['uuid'] for arq in arqs], instance, rp)
        resolved = self.wait_resolved(instance)
        for arq in resolved:
            self.assert_bound(arq, instance, rp)
        handles = {arq['attach_handle_uuid'] for arq in resolved}
        self.assertEqual(2, len(handles), resolved)
        self.assertIn(handle, handles)
        self.delete_instance_arqs(instance)
        self.assertEqual([], self.arqs_over_http('?instance=%s' % instance))

    def devices_over_http(self, version=None):
        return self.http_list('devices', version)

    def deployables_over_http(self):
        return self.http_list('deployables')

    def deployable_ids(self):
        """{uuid: internal id} of the deployables, from the all-in-one's
        database: the API shows parent_id and root_id but not a
        deployable's own id."""
        path = os.path.join(self.state_dir, 'cyborg.sqlite')
        connection = sqlite3.connect('file:%s?mode=ro' % path, uri=True)
        try:
            return dict(connection.execute(
                'SELECT uuid, id FROM deployables').fetchall())
        finally:
            connection.close()

    def assert_tree(self, rows):
        """``rows`` (with name, parent_id, root_id) form EXPECTED_TREE."""
        id_of_name = {}
        ids = self.deployable_ids()
        for row in self.deployables_over_http():
            id_of_name[row['name']] = ids[row['uuid']]
        id_of_name[None] = None
        self.assertEqual(
            {name: (id_of_name[parent], id_of_name[root])
             for name, (parent, root) in EXPECTED_TREE.items()},
            {row['name']: (row['parent_id'], row['root_id'])
             for row in rows})

    # -- curl ----------------------------------------------------------

    def test_plain_http_lists_the_fleet(self):
        devices = self.devices_over_http()
        self.assertEqual(expected_devices(self.host), sorted(
            (d['type'], d['vendor'], d['model'], d['hostname'])
            for d in devices))
        deployables = self.deployables_over_http()
        self.assertEqual(EXPECTED_DEPLOYABLES, sorted(
            (d['name'], d['num_accelerators']) for d in deployables))
        # A card's root, its region, the region's PF and the PF's VFs
        # belong to the same device; three devices.
        device_of = {d['name']: d['device_id'] for d in deployables}
        for bus in ('10', '11'):
            root = 'fpga-0000:%s:00.0' % bus
            self.assertEqual({device_of[root]},
                             {device_of[name] for name in EXPECTED_TREE
                              if name.startswith(root + '-')})
        self.assertEqual(3, len(set(device_of.values())))
        # The regions' parent and root are the card's root; the PFs' and
        # VFs' root too. Only the regions and the whole GPU have providers.
        self.assert_tree(deployables)
        self.assertEqual(
            ['fpga-0000:10:00.0-region0', 'fpga-0000:11:00.0-region0',
             'gpu-0000:12:00.0'],
            sorted(d['name'] for d in deployables if d['rp_uuid']))

    # -- python-openstackclient and python-cyborgclient -----------------

    def check_cli_device_list(self, client):
        rows = self.openstack('accelerator', 'device', 'list', client=client)
        self.assert_rows_match(self.devices_over_http(), rows,
                               ('type', 'vendor', 'hostname',
                                'std_board_info'))
        self.assertEqual(
            sorted((d[0], d[1], d[3]) for d in expected_devices(self.host)),
            sorted((row['type'], row['vendor'], row['hostname'])
                   for row in rows))

    def test_openstackclient_device_list_shows_the_fleet(self):
        self.check_cli_device_list(CLI_OPENSTACKCLIENT)

    def test_cyborgclient_device_list_shows_the_fleet(self):
        self.check_cli_device_list(CLI_CYBORGCLIENT)

    def check_cli_device_list_long_at_2_3(self, client):
        rows = self.openstack('accelerator', 'device', 'list', '--long',
                              api_version='2.3', client=client)
        reference = self.devices_over_http(version='2.3')
        self.assert_rows_match(reference, rows, DEVICE_FIELDS + ('status',))
        self.assertEqual(['enabled'] * 3, [row['status'] for row in rows])
        self.assertEqual(expected_devices(self.host), sorted(
            (row['type'], row['vendor'], row['model'], row['hostname'])
            for row in rows))

    def test_openstackclient_device_list_long_at_2_3_shows_status(self):
        self.check_cli_device_list_long_at_2_3(CLI_OPENSTACKCLIENT)

    def test_cyborgclient_device_list_long_at_2_3_shows_status(self):
        self.check_cli_device_list_long_at_2_3(CLI_CYBORGCLIENT)

    def test_cli_device_show_with_the_v2_endpoint(self):
        device = self.devices_over_http()[0]
        shown = self.openstack(
            'accelerator', 'device', 'show', device['uuid'],
            endpoint='http://127.0.0.1:%d/v2' % self.api_port)
        self.assert_rows_match([device], [shown], DEVICE_FIELDS)

    def check_cli_deployable_list(self, client):
        rows = self.openstack('accelerator', 'deployable', 'list',
                              client=client)
        self.assert_rows_match(self.deployables_over_http(), rows,
                               ('name', 'device_id'))
        self.assertEqual([name for name, _ in EXPECTED_DEPLOYABLES],
                         sorted(row['name'] for row in rows))

    def test_openstackclient_deployable_list_shows_the_fleet(self):
        self.check_cli_deployable_list(CLI_OPENSTACKCLIENT)

    def test_cyborgclient_deployable_list_shows_the_fleet(self):
        self.check_cli_deployable_list(CLI_CYBORGCLIENT)

    def test_cyborgclient_deployable_list_long_shows_the_tree(self):
        rows = self.openstack('accelerator', 'deployable', 'list', '--long',
                              client=CLI_CYBORGCLIENT)
        self.assert_rows_match(self.deployables_over_http(), rows,
                               DEPLOYABLE_FIELDS)
        self.assertEqual(EXPECTED_DEPLOYABLES, sorted(
            (row['name'], row['num_accelerators']) for row in rows))
        self.assert_tree(rows)

    # -- openstacksdk --------------------------------------------------

    def test_sdk_devices_with_every_endpoint_form(self):
        reference = self.devices_over_http()
        for endpoint in ('http://127.0.0.1:%d/', 'http://127.0.0.1:%d',
                         'http://127.0.0.1:%d/v2'):
            connection = self.sdk(endpoint % self.api_port)
            devices = [device.to_dict(computed=False)
                       for device in connection.accelerator.devices()]
            self.assert_rows_match(reference, devices, DEVICE_FIELDS)
            # openstacksdk's id is the uuid (its alternate id).
            self.assertEqual([d['uuid'] for d in devices],
                             [d['id'] for d in devices])

    def test_sdk_get_device_at_2_3_has_status(self):
        reference = self.devices_over_http(version='2.3')
        accelerator = self.sdk(microversion='2.3').accelerator
        for expected in reference:
            device = accelerator.get_device(expected['uuid'])
            self.assert_rows_match([expected], [device.to_dict()],
                                   DEVICE_FIELDS + ('status',))
            self.assertEqual('enabled', device.status)

    def test_sdk_pages_with_a_limit(self):
        accelerator = self.sdk().accelerator
        self.assertEqual(
            sorted(device['uuid'] for device in self.devices_over_http()),
            sorted(device.uuid for device in accelerator.devices(limit=1)))
        self.assertEqual(
            [name for name, _ in EXPECTED_DEPLOYABLES],
            sorted(d.name for d in accelerator.deployables(limit=2)))

    def test_sdk_deployables_and_get_deployable(self):
        reference = self.deployables_over_http()
        accelerator = self.sdk().accelerator
        deployables = [with_uuid(deployable)
                       for deployable in accelerator.deployables()]
        self.assert_rows_match(reference, deployables, DEPLOYABLE_FIELDS)
        self.assertEqual(EXPECTED_DEPLOYABLES, sorted(
            (d['name'], d['num_accelerators']) for d in deployables))
        one = accelerator.get_deployable(reference[0]['uuid'])
        self.assert_rows_match(reference[:1], [with_uuid(one)],
                               DEPLOYABLE_FIELDS)

    # -- Device profiles -----------------------------------------------

    def check_cli_device_profile(self, client):
        name = unique_name('cli')
        if client == CLI_OPENSTACKCLIENT:
            group = ['--group', ','.join(
                '%s=%s' % item for item in sorted(FPGA_GROUPS[0].items()))]
        else:
            group = [json.dumps(FPGA_GROUPS)]
        created = self.openstack('accelerator', 'device', 'profile',
                                 'create', name, *group,
                                 '--description', 'one FPGA region',
                                 client=client)
        self.addCleanup(http_call, 'DELETE', self.api_port,
                        '/v2/device_profiles/%s' % name)
        self.assertEqual((name, FPGA_GROUPS, 'one FPGA region'),
                         (created['name'], created['groups'],
                          created['description']))
        # Two more, so that the listing spans pages.
        others = [self.create_profile_over_http(unique_name('page'))
                  for _ in range(2)]
        reference = self.http_list('device_profiles')
        self.assert_rows_match(reference, [created], PROFILE_FIELDS,
                               every=False)
        listed = self.openstack('accelerator', 'device', 'profile', 'list',
                                client=client)
        self.assert_rows_match(reference, listed, PROFILE_FIELDS)
        self.assertLessEqual(
            {created['uuid']} | {other['uuid'] for other in others},
            {row['uuid'] for row in listed})
        by_uuid = self.openstack('accelerator', 'device', 'profile', 'show',
                                 created['uuid'], client=client)
        by_name = self.openstack('accelerator', 'device', 'profile', 'show',
                                 name, api_version='2.2', client=client)
        self.assert_rows_match([created], [by_uuid, by_name],
                               PROFILE_FIELDS + ('created_at',), every=False)
        self.openstack('accelerator', 'device', 'profile', 'delete',
                       created['uuid'], client=client, output=False)
        self.assertEqual(404, http_get(
            self.api_port, '/v2/device_profiles/%s' % created['uuid'],
        ).status_code)

    def test_openstackclient_device_profile_create_list_show_delete(self):
        self.check_cli_device_profile(CLI_OPENSTACKCLIENT)

    def test_cyborgclient_device_profile_create_list_show_delete(self):
        self.check_cli_device_profile(CLI_CYBORGCLIENT)

    def test_sdk_device_profile_create_list_get_delete(self):
        name = unique_name('sdk')
        accelerator = self.sdk().accelerator
        created = accelerator.create_device_profile(
            name=name, groups=FPGA_GROUPS, description='one FPGA region')
        self.addCleanup(http_call, 'DELETE', self.api_port,
                        '/v2/device_profiles/%s' % name)
        self.assertEqual((name, FPGA_GROUPS, 'one FPGA region'),
                         (created.name, created.groups, created.description))
        self.create_profile_over_http(unique_name('page'))
        self.create_profile_over_http(unique_name('page'))
        reference = self.http_list('device_profiles')
        self.assert_rows_match(reference, [with_uuid(created)],
                               PROFILE_FIELDS, every=False)
        self.assert_rows_match(reference, [
            with_uuid(profile) for profile in accelerator.device_profiles()],
            PROFILE_FIELDS)
        by_uuid = accelerator.get_device_profile(created.uuid)
        by_name = self.sdk(microversion='2.2').accelerator.get_device_profile(
            name)
        self.assert_rows_match([with_uuid(created)],
                               [with_uuid(by_uuid), with_uuid(by_name)],
                               PROFILE_FIELDS, every=False)
        accelerator.delete_device_profile(created.uuid, ignore_missing=False)
        self.assertRaises(openstack.exceptions.NotFoundException,
                          accelerator.get_device_profile, created.uuid)
        # ignore_missing: a 404 is success.
        accelerator.delete_device_profile(created.uuid)

    # -- ARQs: what Nova does, through each client ----------------------

    def check_cli_arq_lifecycle(self, client, region):
        """Create, bind, show, list, unbind, bind, delete one ARQ."""
        name = unique_name('fpga')
        self.create_profile_over_http(name)
        rp = self.region_rp(region)
        created = self.openstack('accelerator', 'arq', 'create', name,
                                 client=client)
        self.assertEqual(('Initial', name, None, ''),
                         (created['state'], created['device_profile_name'],
                          created['instance_uuid'],
                          created['attach_handle_type']))
        arq_uuid = created['uuid']
        instance = str(uuid.uuid4())
        self.addCleanup(self.delete_instance_arqs, instance)

        bind = ['accelerator', 'arq', 'bind', arq_uuid, self.host, instance,
                rp]
        if client == CLI_CYBORGCLIENT:
            bind.append(str(uuid.uuid4()))  # project_id: required, not sent
        shown = self.openstack(*bind, client=client)
        self.assertEqual(arq_uuid, shown['uuid'])
        self.assertIn(shown['state'], ('BindStarted', 'Bound'))
        if client == CLI_OPENSTACKCLIENT:
            self.assertIn(instance, self.nova.servers_asked)
        resolved = self.wait_resolved(instance)
        self.assertEqual([arq_uuid], [arq['uuid'] for arq in resolved])
        self.assert_bound(resolved[0], instance, rp)

        shown = self.openstack('accelerator', 'arq', 'show', arq_uuid,
                               client=client)
        self.assert_rows_match(resolved, [shown], ARQ_FIELDS)
        listed = self.openstack('accelerator', 'arq', 'list', '--long',
                                client=client)
        self.assert_rows_match(self.arqs_over_http(), listed, ARQ_FIELDS)
        self.assertEqual([resolved[0]['attach_handle_info']],
                         [row['attach_handle_info'] for row in listed
                          if row['uuid'] == arq_uuid])

        self.openstack('accelerator', 'arq', 'unbind', arq_uuid,
                       client=client)
        self.assert_unbound(self.wait_state(arq_uuid, 'Unbound'))
        self.assertEqual([], self.arqs_over_http('?instance=%s' % instance))

        self.openstack(*bind, client=client)
        resolved = self.wait_resolved(instance)
        self.assert_bound(resolved[0], instance, rp)
        self.openstack('accelerator', 'arq', 'delete', arq_uuid,
                       client=client, output=False)
        self.assertEqual(404, http_get(
            self.api_port, '/v2/accelerator_requests/%s' % arq_uuid,
        ).status_code)
        self.assert_handle_free(rp, resolved[0]['attach_handle_uuid'])

    def test_cyborgclient_arq_create_bind_unbind_delete(self):
        self.check_cli_arq_lifecycle(CLI_CYBORGCLIENT,
                                     'fpga-0000:10:00.0-region0')

    def test_openstackclient_arq_create_bind_unbind_delete(self):
        self.check_cli_arq_lifecycle(CLI_OPENSTACKCLIENT,
                                     'fpga-0000:11:00.0-region0')

    def test_sdk_arq_create_bind_unbind_delete(self):
        name = unique_name('sdk')
        accelerator = self.sdk().accelerator
        accelerator.create_device_profile(name=name, groups=FPGA_GROUPS)
        self.addCleanup(http_call, 'DELETE', self.api_port,
                        '/v2/device_profiles/%s' % name)
        rp = self.region_rp('fpga-0000:10:00.0-region0')
        arq = accelerator.create_accelerator_request(device_profile_name=name)
        self.assertEqual(('Initial', name), (arq.state, arq.device_profile_name))
        instance = str(uuid.uuid4())
        self.addCleanup(self.delete_instance_arqs, instance)

        ops = bind_ops(self.host, instance, rp)
        accelerator.patch_accelerator_request(arq.uuid, ops)
        resolved = self.wait_resolved(instance)
        self.assert_bound(resolved[0], instance, rp)
        got = accelerator.get_accelerator_request(arq.uuid)
        self.assert_rows_match(resolved, [got.to_dict(computed=False)],
                               ARQ_FIELDS)
        self.assertIn(arq.uuid,
                      [row.uuid for row in accelerator.accelerator_requests()])

        # The deprecated name of patch_accelerator_request.
        accelerator.update_accelerator_request(arq.uuid, [
            {'path': path, 'op': 'remove'}
            for path in ('/hostname', '/device_rp_uuid', '/instance_uuid')])
        self.assert_unbound(self.wait_state(arq.uuid, 'Unbound'))

        accelerator.patch_accelerator_request(arq.uuid, ops)
        handle = self.wait_resolved(instance)[0]['attach_handle_uuid']
        accelerator.delete_accelerator_request(arq.uuid, ignore_missing=False)
        self.assertRaises(openstack.exceptions.NotFoundException,
                          accelerator.get_accelerator_request, arq.uuid)
        accelerator.delete_accelerator_request(arq.uuid)
        self.assert_handle_free(rp, handle)


def unique_name(prefix):
    return '%s-%s' % (prefix, uuid.uuid4().hex[:8])


def bind_ops(host, instance, rp):
    """The add operations that bind an ARQ, as Nova sends them."""
    return [{'path': '/hostname', 'op': 'add', 'value': host},
            {'path': '/device_rp_uuid', 'op': 'add', 'value': rp},
            {'path': '/instance_uuid', 'op': 'add', 'value': instance}]


def http_call(method, port, path, body=None):
    """``method`` ``path`` with a JSON ``body``; return the response."""
    return requests.request(method, 'http://127.0.0.1:%d%s' % (port, path),
                            json=body, timeout=10)

def http_get(port, path, version=None):
    """GET ``path`` on 127.0.0.1:``port``, as curl would; return the response."""
    headers = {}
    if version:
        headers['OpenStack-API-Version'] = 'accelerator %s' % version
    return requests.get('http://127.0.0.1:%d%s' % (port, path),
                        headers=headers, timeout=10)


def with_uuid(resource):
    """An openstacksdk resource as a dict that also has ``uuid``.

    openstacksdk's Deployable maps the API's ``uuid`` to ``id`` and has no
    ``uuid`` attribute of its own.
    """
    values = resource.to_dict(computed=False)
    values.setdefault('uuid', values['id'])
    return values


class FakeNova:
    """Nova's compute API as far as ``openstack accelerator arq bind`` uses it.

    OpenStackClient's ``arq bind`` looks the server up (version discovery,
    then ``GET /v2.1/servers/{id}``) before it binds; every uuid is a
    server here. ``servers_asked`` lists the uuids asked for.
    """

    SERVER_PATH = re.compile(r'^/v2\.1/servers/([0-9a-f-]{36})$')

    def __init__(self):
        self.servers_asked = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                path = self.path.split('?')[0].rstrip('/')
                server = fake.SERVER_PATH.match(path)
                if path == '/v2.1':
                    body = {'version': fake.version()}
                elif path == '':
                    body = {'versions': [fake.version()]}
                elif server:
                    fake.servers_asked.append(server.group(1))
                    body = {'server': {'id': server.group(1), 'name': 'vm'}}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode('utf-8')
                self.send_response(200)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *arguments):
                pass

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                      Handler)
        self.root = 'http://127.0.0.1:%d' % self.server.server_port
        self.url = self.root + '/v2.1'
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)
        self.thread.start()

    def version(self):
        return {'id': 'v2.1', 'status': 'CURRENT', 'version': '2.96',
                'min_version': '2.1',
                'links': [{'rel': 'self', 'href': self.url + '/'}]}

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
