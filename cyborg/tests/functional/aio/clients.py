"""What the client tests share: a cyborg-aio serving a simulated fleet.

Each test class built on ``ClientsTestCase`` (``test_openstack_cli`` and
``test_openstacksdk``) starts one ``cyborg-aio`` process for all its tests:
a simulated fleet of two FPGAs and one GPU (``[agent] fake_inventory``), no
Keystone, and ``[api] max_limit = 2``, so that every listing spans pages as
a large fleet's does (the default page holds 1000 rows) and each client
must follow them. The same devices and deployables must come out of a
plain HTTP GET, ``openstack accelerator ...`` (both implementations, see
``test_openstack_cli``) and openstacksdk's ``conn.accelerator``; device
profiles and ARQs go through their whole life with each client.

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
* The all-in-one has no Keystone (``noauth``): every request is an
  administrator's with a service token, which ``arq bind``/``unbind`` and
  deleting a bound ARQ need.

To check another resource, add its expected rows next to ``FLEET`` and a
test using ``openstack()`` (``test_openstack_cli``), ``sdk()``
(``test_openstacksdk``), ``http_get()`` and ``http_list()``.
"""

import os
import shutil
import sqlite3
import tempfile
import time
import uuid

import requests
from testtools import content
from testtools import content_type

from cyborg.tests import base
from cyborg.tests.fixtures import processes

START_TIMEOUT = 90
# Rows per page: smaller than every listing of the fleet.
MAX_LIMIT = 2
# How long a bind may take to resolve.
BIND_TIMEOUT = 60

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


class ClientsTestCase(base.TestCase):
    """The all-in-one of a test class, and what its tests check with.

    ``setUpClass`` starts ``cyborg-aio`` in a temporary directory
    (``directory``, which a subclass may add files to) and waits until the
    fleet is in the API; ``_stop`` ends it and removes the directory.
    """

    aio = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.directory = tempfile.mkdtemp(prefix='cyborg-clients-')
        cls.host = 'clients-%s' % uuid.uuid4().hex[:8]
        cls.api_port = processes.free_port()
        cls.state_dir = os.path.join(cls.directory, 'state')
        fleet_path = os.path.join(cls.directory, 'fleet.yaml')
        with open(fleet_path, 'w') as fleet_file:
            fleet_file.write(FLEET)
        cls.aio = processes.ServiceProcess('cyborg-aio', {
            'DEFAULT': {'host': cls.host},
            'api': {'port': cls.api_port, 'max_limit': MAX_LIMIT,
                    'fleet_page_port': processes.free_port()},
            'aio': {'state_dir': cls.state_dir,
                    'placement_port': processes.free_port(),
                    'glance_port': processes.free_port()},
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
        """End the all-in-one and remove the directory."""
        if cls.aio is not None:
            cls.aio.cleanUp()
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


def unique_name(prefix):
    """``prefix`` and 8 random hex digits: a name no other test uses."""
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

