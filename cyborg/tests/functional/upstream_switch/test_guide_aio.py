"""The operator guide's switch followed on the all-in-one (issue 34).

doc/source/admin/switching-from-cyborg.rst, step by step, with
``cyborg-aio`` as this service: a real OpenStack Cyborg 17.0.0
(``cyborg.tests.fixtures.upstream_cyborg``, one compute host, its fake
driver, its own MariaDB database) makes the database an operator has:
two device profiles, one instance's two ARQs bound as Nova binds them
(with its allocation in Placement), one ARQ left unbound. Then the guide:
upstream's services stopped; its database backed up with ``mysqldump
--single-transaction`` and the dump loaded into a new database (the copy
an operator rehearses on); upstream's ``cyborg.conf`` kept and the
all-in-one's file after it, as "The all-in-one" section says
(``[database] connection`` of the new database, the embedded Placement
and Glance); ``cyborg-dbsync upgrade``, ``import-upstream --from <copy>
--dry-run`` (writes nothing), the import, and ``cyborg-aio`` started on
the two files. Its API must then serve the imported profiles by name and
uuid, answer Nova's ``bind_state=resolved`` question for the bound
instance as upstream answered it, and list the unbound ARQ, unbound.

The all-in-one's embedded Placement is not the Placement upstream used, so
the imported providers cannot be adopted there and that is not checked
here (test_rehearsal.py checks adoption against upstream's own Placement);
what is checked is that the all-in-one works on its embedded Placement
and leaves upstream's alone.
"""

import os
import subprocess
import uuid

import requests
import sqlalchemy as sa

from cyborg.db import models
from cyborg.tests.fixtures import database
from cyborg.tests.fixtures import messaging
from cyborg.tests.fixtures import nova as nova_fixture
from cyborg.tests.fixtures import placement as placement_fixture
from cyborg.tests.fixtures import processes
from cyborg.tests.fixtures import upstream_cyborg
from cyborg.tests.functional.aio import test_aio
from cyborg.tests.functional.upstream_switch import cloud

# What the import carries from one upstream host: its card (a device, its
# control path, one deployable with two attributes and its handles), two
# profiles and three ARQs.
IMPORTED = {'devices': 1, 'controlpath_ids': 1, 'deployables': 1,
            'attributes': 2, 'attach_handles': upstream_cyborg.FAKE_HANDLES,
            'device_profiles': 2, 'extended_accelerator_requests': 3}
DUMP_TIMEOUT = 60


def mysql_arguments(url):
    """The mysql/mysqldump client options reaching the database of
    ``url``, the database's name last."""
    url = sa.engine.make_url(url)
    arguments = ['--host=%s' % (url.host or '127.0.0.1'),
                 '--port=%d' % (url.port or 3306),
                 '--user=%s' % url.username]
    if url.password:
        arguments.append('--password=%s' % url.password)
    return arguments + [url.database]


def providers(placement):
    """The providers of a served ``PlacementFixture``, by uuid."""
    response = placement.adapter.get('/resource_providers')
    assert response.status_code == 200, response.text
    return {provider['uuid']: provider
            for provider in response.json()['resource_providers']}


class GuideOnTheAllInOneTest(cloud.UpstreamCloudMixin,
                             test_aio.AllInOneProcess):

    def setUp(self):
        upstream_cyborg.require_upstream_venv()
        super().setUp()
        bus = self.useFixture(messaging.RabbitIsolation())
        placement_url = self.useFixture(database.Database(
            'mysql', schema=None, patch_facade=False)).url
        self.placement = self.useFixture(placement_fixture.PlacementFixture(
            serve=True, database_url=placement_url))
        self.compute = 'compute-%s' % uuid.uuid4().hex[:8]
        self.upstream = self.useFixture(upstream_cyborg.UpstreamCyborg(
            self.placement, [self.compute], bus.transport_url,
            bus.control_exchange))

    # -- Upstream, as a cloud uses it ----------------------------------------

    def _upstream_cloud(self):
        """Profiles, one instance's two bound ARQs, one unbound ARQ; (the
        profiles by name, the instance, upstream's resolved answer for it,
        the unbound ARQ)."""
        suffix = uuid.uuid4().hex[:8]
        one, two = 'guide-one-%s' % suffix, 'guide-two-%s' % suffix
        self._upstream(201, 'POST', '/v2/device_profiles', [
            {'name': one, 'description': 'one fake FPGA',
             'groups': [{'resources:FPGA': '1'}]}])
        self._upstream(201, 'POST', '/v2/device_profiles', [
            {'name': two, 'groups': [{'resources:FPGA': '1'},
                                     {'resources:FPGA': '1'}]}])
        profiles = {profile['name']: profile for profile in self._upstream(
            200, 'GET', '/v2/device_profiles')['device_profiles']}
        [deployable] = self._upstream(200, 'GET',
                                      '/v2/deployables')['deployables']
        rp_uuid = deployable['rp_uuid']
        instance, resolved = self._upstream_boot(two, self.compute, rp_uuid)
        [unbound] = self._upstream(201, 'POST', '/v2/accelerator_requests', {
            'device_profile_name': one})['arqs']
        return profiles, instance, resolved, unbound

    # -- The guide's steps ---------------------------------------------------

    def _backup_and_copy(self):
        """Step 1's backup (mysqldump --single-transaction), loaded into a
        new database: the copy's URL."""
        dump_path = os.path.join(self.directory, 'cyborg-upstream.sql')
        with open(dump_path, 'wb') as dump:
            subprocess.run(
                ['mysqldump', '--single-transaction']
                + mysql_arguments(self.upstream.database_url),
                stdout=dump, check=True, timeout=DUMP_TIMEOUT)
        copy = self.useFixture(database.Database(
            'mysql', schema=None, driver='pymysql', patch_facade=False))
        with open(dump_path, 'rb') as dump:
            subprocess.run(['mysql'] + mysql_arguments(copy.url), stdin=dump,
                           check=True, timeout=DUMP_TIMEOUT)
        return copy.url

    def _configure(self):
        """Upstream's cyborg.conf kept; the all-in-one's file after it
        names the new database and the embedded Placement and Glance."""
        self.upstream_path = os.path.join(self.directory, 'cyborg.conf')
        processes.write_config(self.upstream_path, self.upstream.options)
        os.makedirs(self.state_dir)
        self.target = os.path.join(self.state_dir, 'cyborg.sqlite')
        with open(self.config_path, 'a') as config_file:
            config_file.write(
                '[database]\nconnection = sqlite:///%s\n'
                '[placement]\nauth_type = admin_token\n'
                'endpoint = http://127.0.0.1:%d\n'
                '[glance]\nendpoint_override = http://127.0.0.1:%d\n'
                % (self.target, self.placement_port, self.glance_port))

    def _config_files(self):
        # Upstream's file first: the all-in-one's own file wins.
        return [self.upstream_path, self.config_path]

    def _dbsync(self, *arguments):
        command = [processes.console_script('cyborg-dbsync')]
        for path in self._config_files():
            command += ['--config-file', path]
        return nova_fixture.run_checked(command + list(arguments))

    def _row_counts(self):
        engine = sa.create_engine('sqlite:///%s' % self.target,
                                  poolclass=sa.pool.NullPool)
        try:
            with engine.connect() as connection:
                return {table.name: connection.execute(
                            sa.select(sa.func.count()).select_from(table)
                        ).scalar_one()
                        for table in models.Base.metadata.sorted_tables}
        finally:
            engine.dispose()

    # -- The all-in-one, afterwards ------------------------------------------

    def _get(self, path):
        response = requests.get('http://127.0.0.1:%d%s' % (self.api_port,
                                                            path), timeout=15)
        self.assertEqual(200, response.status_code, response.text)
        return response.json()

    def _own_devices(self):
        devices = self._devices() or []
        return [device for device in devices
                if device['hostname'] == self.host]

    def test_guide_on_the_all_in_one(self):
        profiles, instance, resolved, unbound = self._upstream_cloud()
        upstream_providers = providers(self.placement)

        # 4. Stop upstream's services; 1. the backup, as a new database.
        self.upstream.stop()
        copy_url = self._backup_and_copy()

        # 2. Prepare this service's database; 3. dry run; 5. import.
        self._configure()
        self._dbsync('upgrade')
        empty = self._row_counts()
        dry_run = self._dbsync('import-upstream', '--from', copy_url,
                               '--dry-run')
        self.assertIn('Dry run: nothing was written.', dry_run)
        self.assertNotIn('Not carried over', dry_run)
        self.assertEqual(empty, self._row_counts())
        output = self._dbsync('import-upstream', '--from', copy_url)
        self.assertEqual(
            ['%s: %d inserted, 0 already there, 0 not carried over'
             % (table, count) for table, count in IMPORTED.items()],
            [line for line in output.splitlines() if 'already there' in line])

        # 6. Start the all-in-one on the two files.
        self._start()
        self._wait_for('answer from GET /v2', self._api_version)

        # 7. Check: the profiles by name and uuid.
        served = {profile['name']: profile for profile in self._get(
            '/v2/device_profiles')['device_profiles']}
        self.assertEqual(cloud.profiles_as_carried(profiles),
                         cloud.profiles_as_carried(served))
        for name, profile in profiles.items():
            self.assertEqual(name, self._get(
                '/v2/device_profiles/%s' % profile['uuid'])[
                    'device_profile']['name'])
        # The bound instance's ARQs, as Nova asks for them.
        ours = self._get('/v2/accelerator_requests?instance=%s'
                         '&bind_state=resolved' % instance)['arqs']
        self.assertEqual(cloud.seen_by_nova(resolved), cloud.seen_by_nova(ours))
        # The unbound ARQ listed, unbound.
        listed = {arq['uuid']: arq for arq in self._get(
            '/v2/accelerator_requests')['arqs']}
        self.assertEqual(
            ('Initial', unbound['device_profile_name'], None, None),
            tuple(listed[unbound['uuid']][field] for field in (
                'state', 'device_profile_name', 'hostname', 'instance_uuid')))
        self.assertEqual({unbound['uuid']} | {arq['uuid'] for arq in ours},
                         set(listed))

        # The all-in-one's own agent reports to its embedded Placement,
        # not to upstream's.
        self._wait_for('the first report of %s' % self.host,
                       self._own_devices)
        node = self._placement('/resource_providers?name=%s' % self.host)
        self.assertEqual(1, len(node.json()['resource_providers']),
                         node.text)
        self.assertEqual(upstream_providers, providers(self.placement))
