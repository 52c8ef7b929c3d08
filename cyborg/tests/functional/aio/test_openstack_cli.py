"""python-openstackclient and python-cyborgclient against cyborg-aio.

What an operator sees with ``openstack accelerator ...``; the all-in-one,
its fleet and the plain HTTP reference rows are ``clients.ClientsTestCase``'s.

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
"""

import http.server
import json
import os
import re
import subprocess
import sys
import threading
import uuid

from cyborg.tests.fixtures import processes
from cyborg.tests.functional.aio import clients

CLI_TIMEOUT = 120

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


class TestOpenStackCLI(clients.ClientsTestCase):
    """The fleet, device profiles and ARQs through the openstack CLI."""

    nova = None

    @classmethod
    def setUpClass(cls):
        """Start the all-in-one, then FakeNova, named in clouds.yaml."""
        super().setUpClass()
        try:
            cls.nova = FakeNova()
            cls.clouds_yaml = os.path.join(cls.directory, 'clouds.yaml')
            with open(cls.clouds_yaml, 'w') as clouds_file:
                json.dump({'clouds': {'aio': {
                    'auth_type': 'none',
                    'compute_endpoint_override': cls.nova.url}}}, clouds_file)
        except BaseException:
            cls._stop()
            raise

    @classmethod
    def _stop(cls):
        """Stop FakeNova too."""
        if cls.nova is not None:
            cls.nova.stop()
        super()._stop()

    # -- Helpers -------------------------------------------------------

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

    # -- python-openstackclient and python-cyborgclient -----------------

    def check_cli_device_list(self, client):
        rows = self.openstack('accelerator', 'device', 'list', client=client)
        self.assert_rows_match(self.devices_over_http(), rows,
                               ('type', 'vendor', 'hostname',
                                'std_board_info'))
        self.assertEqual(
            sorted((d[0], d[1], d[3])
                   for d in clients.expected_devices(self.host)),
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
        self.assert_rows_match(reference, rows,
                               clients.DEVICE_FIELDS + ('status',))
        self.assertEqual(['enabled'] * 3, [row['status'] for row in rows])
        self.assertEqual(clients.expected_devices(self.host), sorted(
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
        self.assert_rows_match([device], [shown], clients.DEVICE_FIELDS)

    def check_cli_deployable_list(self, client):
        rows = self.openstack('accelerator', 'deployable', 'list',
                              client=client)
        self.assert_rows_match(self.deployables_over_http(), rows,
                               ('name', 'device_id'))
        self.assertEqual([name for name, _ in clients.EXPECTED_DEPLOYABLES],
                         sorted(row['name'] for row in rows))

    def test_openstackclient_deployable_list_shows_the_fleet(self):
        self.check_cli_deployable_list(CLI_OPENSTACKCLIENT)

    def test_cyborgclient_deployable_list_shows_the_fleet(self):
        self.check_cli_deployable_list(CLI_CYBORGCLIENT)

    def test_cyborgclient_deployable_list_long_shows_the_tree(self):
        rows = self.openstack('accelerator', 'deployable', 'list', '--long',
                              client=CLI_CYBORGCLIENT)
        self.assert_rows_match(self.deployables_over_http(), rows,
                               clients.DEPLOYABLE_FIELDS)
        self.assertEqual(clients.EXPECTED_DEPLOYABLES, sorted(
            (row['name'], row['num_accelerators']) for row in rows))
        self.assert_tree(rows)

    # -- Device profiles -----------------------------------------------

    def check_cli_device_profile(self, client):
        name = clients.unique_name('cli')
        if client == CLI_OPENSTACKCLIENT:
            group = ['--group', ','.join(
                '%s=%s' % item
                for item in sorted(clients.FPGA_GROUPS[0].items()))]
        else:
            group = [json.dumps(clients.FPGA_GROUPS)]
        created = self.openstack('accelerator', 'device', 'profile',
                                 'create', name, *group,
                                 '--description', 'one FPGA region',
                                 client=client)
        self.addCleanup(clients.http_call, 'DELETE', self.api_port,
                        '/v2/device_profiles/%s' % name)
        self.assertEqual((name, clients.FPGA_GROUPS, 'one FPGA region'),
                         (created['name'], created['groups'],
                          created['description']))
        # Two more, so that the listing spans pages.
        others = [self.create_profile_over_http(clients.unique_name('page'))
                  for _ in range(2)]
        reference = self.http_list('device_profiles')
        self.assert_rows_match(reference, [created], clients.PROFILE_FIELDS,
                               every=False)
        listed = self.openstack('accelerator', 'device', 'profile', 'list',
                                client=client)
        self.assert_rows_match(reference, listed, clients.PROFILE_FIELDS)
        self.assertLessEqual(
            {created['uuid']} | {other['uuid'] for other in others},
            {row['uuid'] for row in listed})
        by_uuid = self.openstack('accelerator', 'device', 'profile', 'show',
                                 created['uuid'], client=client)
        by_name = self.openstack('accelerator', 'device', 'profile', 'show',
                                 name, api_version='2.2', client=client)
        self.assert_rows_match([created], [by_uuid, by_name],
                               clients.PROFILE_FIELDS + ('created_at',),
                               every=False)
        self.openstack('accelerator', 'device', 'profile', 'delete',
                       created['uuid'], client=client, output=False)
        self.assertEqual(404, clients.http_get(
            self.api_port, '/v2/device_profiles/%s' % created['uuid'],
        ).status_code)

    def test_openstackclient_device_profile_create_list_show_delete(self):
        self.check_cli_device_profile(CLI_OPENSTACKCLIENT)

    def test_cyborgclient_device_profile_create_list_show_delete(self):
        self.check_cli_device_profile(CLI_CYBORGCLIENT)

    # -- ARQs: what Nova does, through each client ----------------------

    def check_cli_arq_lifecycle(self, client, region):
        """Create, bind, show, list, unbind, bind, delete one ARQ."""
        name = clients.unique_name('fpga')
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
        self.assert_rows_match(resolved, [shown], clients.ARQ_FIELDS)
        listed = self.openstack('accelerator', 'arq', 'list', '--long',
                                client=client)
        self.assert_rows_match(self.arqs_over_http(), listed,
                               clients.ARQ_FIELDS)
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
        self.assertEqual(404, clients.http_get(
            self.api_port, '/v2/accelerator_requests/%s' % arq_uuid,
        ).status_code)
        self.assert_handle_free(rp, resolved[0]['attach_handle_uuid'])

    def test_cyborgclient_arq_create_bind_unbind_delete(self):
        self.check_cli_arq_lifecycle(CLI_CYBORGCLIENT,
                                     'fpga-0000:10:00.0-region0')

    def test_openstackclient_arq_create_bind_unbind_delete(self):
        self.check_cli_arq_lifecycle(CLI_OPENSTACKCLIENT,
                                     'fpga-0000:11:00.0-region0')


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
