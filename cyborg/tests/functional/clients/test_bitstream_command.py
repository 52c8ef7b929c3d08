"""cyborg-bitstream (cyborg.cmd.bitstream) against a real Glance.

Commands run in this process (``main`` with its own stdout and stderr);
Glance is ``cyborg.tests.fixtures.glance``'s, reached without a token as the
all-in-one's is. What a refused upload leaves is checked in Glance itself,
through cyborg's GlanceClient configured by the fixture.
"""

import io
import json
import os
import uuid

import fixtures

from cyborg.aio import glance as aio_glance
from cyborg import bitstream
from cyborg.clients import glance as glance_client
from cyborg.cmd import bitstream as command
from cyborg import conf as cyborg_conf
from cyborg.tests import base
from cyborg.tests.fixtures import glance as glance_fixture
from cyborg.tests.fixtures import processes

DATA = b'\x00simulated bitstream\xff' * 512
FUNCTION = 'd8424dc4-a4a3-c413-f89e-433683f9040b'
OTHER_FUNCTION = '6f0c8e7a-1b2c-4d3e-8f90-a1b2c3d4e5f6'
REGION = '9346116d-97f4-432b-4fa2-a3a4b6a1d2ab'
# Written with spaces: the upload stores it compact, within 255 characters.
TOPOLOGY = {'pf_num': 1, 'pf': [{'name': 'pf_1', 'pci_offset': '0',
                                 'vf': [{'name': 'vf_1', 'pci_offset': '1'}]}]}
REQUIRED_OPTIONS = ('--name or --bs-name', '--bs-uuid', '--vendor', '--board',
                    '--version', '--driver-ver', '--driver-path',
                    '--function-uuid')


class BitstreamCommandCase(base.TestCase):
    """A Glance of its own, a bitstream file and helpers to run the command."""

    def setUp(self):
        super().setUp()
        # The developer's OS_* variables must not send the command elsewhere.
        for name in list(os.environ):
            if name.startswith('OS_'):
                self.useFixture(fixtures.EnvironmentVariable(name))
        self.glance = self.useFixture(glance_fixture.GlanceFixture())
        self.images = glance_client.GlanceClient(cyborg_conf.CONF)
        self.directory = self.useFixture(fixtures.TempDir()).path
        self.file = self._write('aes.gbs', DATA)

    def _write(self, name, data):
        path = os.path.join(self.directory, name)
        with open(path, 'wb' if isinstance(data, bytes) else 'w') as output:
            output.write(data)
        return path

    def run_command(self, *argv, endpoint=None):
        """``(exit status, stdout, stderr)`` of cyborg-bitstream ``argv``,
        its Glance the fixture's unless ``endpoint`` says otherwise."""
        stdout, stderr = io.StringIO(), io.StringIO()
        status = command.main(
            ['--os-image-url', endpoint or self.glance.endpoint] + list(argv),
            stdout=stdout, stderr=stderr)
        return status, stdout.getvalue(), stderr.getvalue()

    def upload(self, *extra, name='aes-128', function=FUNCTION,
               region=REGION, vendor='intel'):
        """Upload ``self.file`` with good metadata; return the JSON shown."""
        status, out, err = self.run_command(
            'upload', self.file, '--name', name, '--vendor', vendor,
            '--board', 'pac_arria10', '--bs-uuid', str(uuid.uuid4()),
            '--version', '1.0', '--driver-ver', '2.1',
            '--driver-path', '/opt/opae/', '--function-uuid', function,
            '--region-uuid', region, *extra, '-f', 'json')
        self.assertEqual((0, ''), (status, err), out)
        return json.loads(out)

    def glance_image_ids(self):
        return sorted(image['id'] for image in self.images.list_images())

    def list_ids(self, *filters):
        status, out, err = self.run_command('list', *filters, '-f', 'json')
        self.assertEqual((0, ''), (status, err))
        return sorted(row['id'] for row in json.loads(out))

    def _untagged(self, name='plain', **properties):
        """An image with bitstream properties but not the FPGA tag."""
        values = {'bs-name': 'plain', 'bs-uuid': str(uuid.uuid4()),
                  'vendor': 'intel', 'board': 'pac_arria10', 'version': '1',
                  'driver_ver': '1', 'driver_path': '/opt/',
                  'function_uuid': FUNCTION, **properties}
        return self.images.upload(self.file, name, values, tags=['NOTFPGA'])


class TestUpload(BitstreamCommandCase):
    """upload: the checks before Glance, and what it stores."""

    def test_upload_stores_checked_metadata_the_tag_and_the_file(self):
        topology = self._write('topology.json', json.dumps(TOPOLOGY,
                                                           indent=4))
        shown = self.upload(
            '--function-name', 'aes', '--driver', 'OPAE',
            '--description', 'AES-128 for the simulated card',
            '--topology', topology, '--shell-id',
            'AABBCCDDEEFF00112233445566778899',
            region=REGION.replace('-', '').upper())

        image = self.images.get_image(shown['id'])
        self.assertEqual(['FPGA'], image['tags'])
        self.assertEqual('active', image['status'])
        self.assertEqual('aes-128', image['name'])
        expected = {
            'bs-name': 'aes-128', 'vendor': 'intel', 'board': 'pac_arria10',
            'version': '1.0', 'driver': 'OPAE', 'driver_ver': '2.1',
            'driver_path': '/opt/opae/', 'function_uuid': FUNCTION,
            'function_name': 'aes',
            'description': 'AES-128 for the simulated card',
            # uuids as cyborg keeps them: dashed and lower-case.
            'region_uuid': REGION,
            'shell_id': 'aabbccdd-eeff-0011-2233-445566778899',
            'topology': json.dumps(TOPOLOGY, separators=(',', ':')),
        }
        self.assertEqual(expected, {key: image[key] for key in expected})
        self.assertEqual(shown['bs-uuid'], image['bs-uuid'])
        self.assertEqual(1, bitstream.Bitstream.from_image(image)
                         .topology.vf_num)
        with open(self.glance.image_path(image['id']), 'rb') as stored:
            self.assertEqual(DATA, stored.read())
        # What the command printed is the image as Glance has it.
        self.assertEqual([], shown['problems'])
        self.assertEqual(len(DATA), shown['size'])
        self.assertEqual({key: image[key] for key in expected},
                         {key: shown[key] for key in expected})

    def test_upload_names_each_bad_key_and_uploads_nothing(self):
        topology = self._write('topology.json', '{"pf": [{"vf": []}]}')
        status, out, err = self.run_command(
            'upload', self.file, '--name', 'aes', '--vendor', 'intel',
            '--bs-uuid', 'nope', '--version', '1.0', '--driver-ver', '1',
            '--driver-path', '/opt/', '--function-uuid', FUNCTION,
            '--region-uuid', '1234', '--description', 'd' * 256,
            '--topology', topology)

        self.assertEqual((2, ''), (status, out))
        self.assertEqual([
            "cyborg-bitstream upload: --bs-uuid: bs-uuid must be a UUID "
            "(32 hex digits, dashes optional), got 'nope'.",
            'cyborg-bitstream upload: --board: board is required but '
            'missing.',
            'cyborg-bitstream upload: --topology: topology: pf[0].name must '
            'be a non-empty string, got None.',
            'cyborg-bitstream upload: --description: description is 256 '
            'characters long; at most 255 are allowed.',
            "cyborg-bitstream upload: --region-uuid: region_uuid must be a "
            "UUID (32 hex digits, dashes optional), got '1234'.",
        ], err.splitlines())
        self.assertEqual([], self.glance_image_ids())
        self.assertEqual([], os.listdir(self.glance.images_dir))

    def test_upload_without_metadata_names_every_required_key(self):
        status, out, err = self.run_command('upload', self.file)

        self.assertEqual((2, ''), (status, out))
        lines = err.splitlines()
        self.assertEqual(len(REQUIRED_OPTIONS), len(lines), err)
        for option, line in zip(REQUIRED_OPTIONS, lines, strict=True):
            self.assertTrue(line.startswith(
                'cyborg-bitstream upload: %s: ' % option), line)
            self.assertTrue(line.endswith('is required but missing.'), line)
        self.assertEqual([], self.glance_image_ids())

    def test_upload_refuses_missing_and_empty_files(self):
        empty = self._write('empty.gbs', b'')
        for path, problem in ((empty, 'FILE %s is empty.' % empty),
                              (empty + '.missing',
                               'FILE %s.missing is not a file.' % empty)):
            status, _, err = self.run_command(
                'upload', path, '--name', 'aes', '--vendor', 'intel',
                '--board', 'b', '--bs-uuid', FUNCTION, '--version', '1',
                '--driver-ver', '1', '--driver-path', '/opt/',
                '--function-uuid', FUNCTION, '--topology',
                os.path.join(self.directory, 'none.json'))
            self.assertEqual(2, status)
            self.assertEqual([
                'cyborg-bitstream upload: %s' % problem,
                'cyborg-bitstream upload: --topology file %s is not a file.'
                % os.path.join(self.directory, 'none.json')],
                err.splitlines())
        self.assertEqual([], self.glance_image_ids())

    def test_bad_command_lines_exit_2(self):
        for argv in (['upload'], ['list', '--bogus'],
                     ['list', '--function-uuid', FUNCTION,
                      '--function-name', 'aes'], ['frobnicate']):
            with fixtures.MonkeyPatch('sys.stderr', io.StringIO()):
                error = self.assertRaises(SystemExit, self.run_command,
                                          *argv)
            self.assertEqual(2, error.code, argv)
        status, out, err = self.run_command('list', '-c', 'id', '-c',
                                            'colour')
        self.assertEqual((2, ''), (status, out))
        self.assertIn('unknown column colour', err)
        status, _, err = self.run_command('list', '--region-uuid', 'r1')
        self.assertEqual(2, status)
        self.assertEqual("cyborg-bitstream list: --region-uuid must be a "
                         "UUID (32 hex digits, dashes optional), got 'r1'.\n",
                         err)


class TestNameTaken(BitstreamCommandCase):
    """upload of a name a bitstream has: refused, or --replace."""

    def named(self, name='aes-128'):
        """Ids of the images tagged FPGA named ``name``, as Glance has them."""
        return sorted(image['id'] for image in self.images.list_images(
            {'tag': 'FPGA', 'name': name}))

    def upload_status(self, *extra, name='aes-128'):
        """``(exit status, stdout, stderr)`` of a good upload of ``name``."""
        return self.run_command(
            'upload', self.file, '--name', name, '--vendor', 'intel',
            '--board', 'pac_arria10', '--bs-uuid', str(uuid.uuid4()),
            '--version', '1.0', '--driver-ver', '2.1', '--driver-path',
            '/opt/opae/', '--function-uuid', FUNCTION, *extra, '-f', 'json')

    def test_upload_refuses_a_name_a_bitstream_has(self):
        first = self.upload()['id']
        # An image of that name that is not a bitstream does not count.
        self._untagged(name='aes-128')

        status, out, err = self.upload_status()

        self.assertEqual((2, ''), (status, out))
        self.assertEqual(
            'cyborg-bitstream upload: a bitstream named aes-128 already '
            'exists (image %s); give --replace to replace it, or another '
            '--name.\n' % first, err)
        self.assertEqual([first], self.named())
        self.assertEqual(0, self.run_command('show', 'aes-128')[0])
        # The bs-name alone does not make a name taken: another --name is
        # accepted with the same --bs-name.
        other = self.upload('--bs-name', 'aes-128', name='aes-128-v2')['id']
        self.assertEqual([other], self.named('aes-128-v2'))

    def test_replace_leaves_exactly_the_new_image(self):
        first = self.upload()['id']
        # Another client checks no names: two bitstreams of one name.
        second = self.images.upload(self.file, 'aes-128', {},
                                    tags=['FPGA'])['id']
        untagged = self._untagged(name='aes-128')['id']

        status, out, err = self.upload_status('--replace')

        self.assertEqual((0, ''), (status, err), out)
        new = json.loads(out)['id']
        self.assertEqual([new], self.named())
        self.assertEqual(sorted([new, untagged]), self.glance_image_ids())
        self.assertEqual(sorted([new, untagged]),
                         sorted(os.listdir(self.glance.images_dir)))
        self.assertNotIn(first, self.glance_image_ids())
        self.assertNotIn(second, self.glance_image_ids())
        status, out, _ = self.run_command('show', 'aes-128', '-f', 'value',
                                          '-c', 'id')
        self.assertEqual((0, new + '\n'), (status, out))
        # Without a bitstream of the name, --replace is a plain upload.
        status, out, err = self.upload_status('--replace', name='gzip')
        self.assertEqual((0, ''), (status, err))
        self.assertEqual([json.loads(out)['id']], self.named('gzip'))

    def test_replace_whose_upload_fails_keeps_the_old_image(self):
        old = self.upload()['id']
        # Glance refuses data over its image_size_cap (413) once the new
        # image is created: that image is deleted, the old one stays.
        glance_config = aio_glance.glance_config()
        glance_config.set_override('image_size_cap', len(DATA) - 1)
        self.addCleanup(glance_config.clear_override, 'image_size_cap')

        status, out, err = self.upload_status('--replace')

        self.assertEqual((1, ''), (status, out))
        self.assertTrue(err.startswith(
            'cyborg-bitstream upload: Glance answered 413 to PUT data of '
            'image '), err)
        self.assertEqual([old], self.named())
        self.assertEqual([old], self.glance_image_ids())

    def test_replace_whose_delete_fails_keeps_both(self):
        old = self.upload()['id']
        # Glance refuses to delete a protected image (403).
        self.images._glance().images.update(old, protected=True)
        self.addCleanup(self.images._glance().images.update, old,
                        protected=False)

        status, out, err = self.upload_status('--replace')

        self.assertEqual((1, ''), (status, out))
        new = [image for image in self.named() if image != old]
        self.assertEqual(1, len(new), err)
        self.assertEqual(sorted([old] + new), self.named())
        self.assertEqual(1, len(err.splitlines()), err)
        self.assertTrue(err.startswith(
            'cyborg-bitstream upload: uploaded image %s as aes-128 but could '
            'not delete the older image %s: Glance answered 403 to DELETE '
            'image %s' % (new[0], old, old)), err)
        self.assertIn('is protected and cannot be deleted.', err)
        self.assertTrue(err.endswith(
            ' Delete it once it can be: openstack image delete %s\n' % old),
            err)


class TestListAndShow(BitstreamCommandCase):
    """list and show: tagged images only, filters, problems, formats."""

    def test_list_shows_only_images_tagged_fpga(self):
        first = self.upload(name='aes-1')['id']
        second = self.upload(name='aes-2')['id']
        self._untagged()

        status, out, err = self.run_command('list', '-f', 'json')

        self.assertEqual((0, ''), (status, err))
        rows = json.loads(out)
        self.assertEqual([first, second], [row['id'] for row in rows])
        self.assertEqual(
            {'id': first, 'name': 'aes-1', 'vendor': 'intel',
             'board': 'pac_arria10', 'function_name': None,
             'function_uuid': FUNCTION, 'region_uuid': REGION,
             'valid': True}, rows[0])

    def test_list_filters_on_function_and_region(self):
        aes = self.upload('--function-name', 'aes', name='aes')['id']
        gzip = self.upload('--function-name', 'gzip', name='gzip',
                           function=OTHER_FUNCTION)['id']
        other_region = str(uuid.uuid4())
        elsewhere = self.upload('--function-name', 'aes', name='elsewhere',
                                region=other_region)['id']
        # Made without cyborg-bitstream: uuids in plain hex, still found.
        plain = self.images.upload(self.file, 'plain', {
            'bs-name': 'plain', 'vendor': 'intel',
            'function_uuid': FUNCTION.replace('-', ''),
            'region_uuid': REGION.replace('-', '')}, tags=['FPGA'])['id']
        self._untagged(function_name='aes')

        self.assertEqual(sorted([aes, elsewhere, plain]), self.list_ids(
            '--function-uuid', FUNCTION.upper()))
        self.assertEqual([gzip], self.list_ids(
            '--function-uuid', OTHER_FUNCTION.replace('-', '')))
        self.assertEqual(sorted([aes, elsewhere]),
                         self.list_ids('--function-name', 'aes'))
        self.assertEqual(sorted([aes, gzip, plain]),
                         self.list_ids('--region-uuid', REGION))
        self.assertEqual(sorted([aes, plain]), self.list_ids(
            '--region-uuid', REGION, '--function-uuid', FUNCTION))
        self.assertEqual([elsewhere], self.list_ids(
            '--function-name', 'aes', '--region-uuid', other_region))
        self.assertEqual([], self.list_ids('--function-name', 'nic-40'))

    def test_list_says_which_images_are_not_valid(self):
        valid = self.upload(name='valid')['id']
        broken = self.images.upload(self.file, 'broken', {'vendor': 'intel'},
                                    tags=['FPGA'])['id']

        status, out, _ = self.run_command('list', '-f', 'value', '-c', 'id',
                                          '-c', 'valid')

        self.assertEqual(0, status)
        self.assertEqual(sorted(['%s True' % valid, '%s False' % broken]),
                         sorted(out.splitlines()))

    def test_show_by_id_or_name(self):
        shown = self.upload(name='aes-128')

        for reference in (shown['id'], 'aes-128'):
            status, out, err = self.run_command('show', reference, '-f',
                                                'json')
            self.assertEqual((0, ''), (status, err))
            self.assertEqual(shown, json.loads(out))

    def test_show_names_the_problems_of_an_image(self):
        image = self._untagged(board='')

        status, out, _ = self.run_command('show', image['id'], '-f', 'json')

        self.assertEqual(0, status)
        self.assertEqual([
            'board is required but empty.',
            'The image is not tagged FPGA (its tags: NOTFPGA).'],
            json.loads(out)['problems'])
        status, out, _ = self.run_command('show', image['id'], '-f', 'value',
                                          '-c', 'problems', '-c', 'tags')
        self.assertEqual((0, 'board is required but empty. The image is not '
                             'tagged FPGA (its tags: NOTFPGA).\nNOTFPGA\n'),
                         (status, out))

    def test_show_refuses_unknown_and_ambiguous_images(self):
        missing = str(uuid.uuid4())
        status, out, err = self.run_command('show', missing)
        self.assertEqual((1, ''), (status, out))
        self.assertEqual('cyborg-bitstream show: Image %s not found in '
                         'Glance.\n' % missing, err)

        first = self.upload(name='twin')['id']
        # cyborg-bitstream refuses a second twin; another client does not.
        second = self.images.upload(self.file, 'twin', {},
                                    tags=['FPGA'])['id']
        status, _, err = self.run_command('show', 'twin')
        self.assertEqual(2, status)
        self.assertIn('2 bitstreams are named twin', err)
        self.assertIn(first, err)
        self.assertIn(second, err)

    def test_table_and_value_output(self):
        shown = self.upload(name='aes-128')

        status, out, _ = self.run_command('show', shown['id'], '-c', 'id',
                                          '-c', 'tags', '-c', 'vendor')
        self.assertEqual(0, status)
        border = '+--------+%s+' % ('-' * (len(shown['id']) + 2))
        self.assertEqual([
            border, '| Field  | Value%s |' % (' ' * (len(shown['id']) - 5)),
            border, '| id     | %s |' % shown['id'],
            '| tags   | FPGA%s |' % (' ' * (len(shown['id']) - 4)),
            '| vendor | intel%s |' % (' ' * (len(shown['id']) - 5)),
            border], out.splitlines())

        status, out, _ = self.run_command('list', '-c', 'name', '-c', 'board')
        self.assertEqual(['+---------+-------------+',
                          '| name    | board       |',
                          '+---------+-------------+',
                          '| aes-128 | pac_arria10 |',
                          '+---------+-------------+'], out.splitlines())

        status, out, _ = self.run_command('show', 'aes-128', '-f', 'value',
                                          '-c', 'id')
        self.assertEqual(shown['id'] + '\n', out)


class TestWhereTheCommandGoes(BitstreamCommandCase):
    """The Glance endpoint and the auth options."""

    def test_glance_that_does_not_answer(self):
        endpoint = 'http://127.0.0.1:%d' % processes.free_port()

        status, out, err = self.run_command('list', endpoint=endpoint)

        self.assertEqual((1, ''), (status, out))
        self.assertTrue(err.startswith(
            'cyborg-bitstream list: Glance cannot be reached: '), err)
        self.assertTrue(err.endswith(
            '(Glance at %s without a token)\n' % endpoint), err)
        self.assertEqual(1, len(err.splitlines()))

    def test_image_url_from_the_environment(self):
        image_id = self.upload()['id']
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_IMAGE_URL', self.glance.endpoint))
        stdout, stderr = io.StringIO(), io.StringIO()

        status = command.main(['list', '-f', 'value', '-c', 'id'],
                              stdout=stdout, stderr=stderr)

        self.assertEqual((0, image_id + '\n', ''),
                         (status, stdout.getvalue(), stderr.getvalue()))

    def test_a_cloud_of_clouds_yaml(self):
        image_id = self.upload()['id']
        clouds = self._write('clouds.yaml', json.dumps({'clouds': {'aio': {
            'auth_type': 'none',
            'image_endpoint_override': self.glance.endpoint}}}))
        self.useFixture(fixtures.EnvironmentVariable(
            'OS_CLIENT_CONFIG_FILE', clouds))
        stdout, stderr = io.StringIO(), io.StringIO()

        status = command.main(['--os-cloud', 'aio', 'show', image_id, '-f',
                               'value', '-c', 'id'],
                              stdout=stdout, stderr=stderr)

        self.assertEqual((0, image_id + '\n', ''),
                         (status, stdout.getvalue(), stderr.getvalue()))

    def test_auth_options_are_used_not_the_all_in_one(self):
        # Keystone is asked for a token first: with none answering, nothing
        # reaches Glance although --os-image-url names it.
        keystone = 'http://127.0.0.1:%d/v3' % processes.free_port()

        status, out, err = self.run_command(
            '--os-auth-url', keystone, '--os-username', 'demo',
            '--os-password', 'secret', '--os-project-name', 'demo',
            '--os-user-domain-name', 'Default',
            '--os-project-domain-name', 'Default',
            'upload', self.file, '--name', 'aes', '--vendor', 'intel',
            '--board', 'pac_arria10', '--bs-uuid', str(uuid.uuid4()),
            '--version', '1', '--driver-ver', '1', '--driver-path', '/opt/',
            '--function-uuid', FUNCTION)

        self.assertEqual((1, ''), (status, out))
        self.assertIn('cannot be reached', err)
        self.assertIn(keystone, err)
        self.assertEqual([], self.glance_image_ids())
