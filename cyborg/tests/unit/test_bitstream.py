"""Bitstream metadata in Glance: keys, formats, topology, tag, matching."""

import json
import pathlib
import types
import uuid

from cyborg import bitstream
from cyborg import bitstream_fit
from cyborg import bitstream_topology
from cyborg.common import vocabulary
from cyborg import exception
from cyborg.agent.drivers import fake
from cyborg.agent.drivers import fake_inventory
from cyborg.tests import base

FLEET = pathlib.Path(fake.__file__).parents[2] / 'aio' / 'fleet.yaml'
BS_UUID = '5f1c2d7e-8a90-4c2a-9a55-6f1c2d7e8a90'
SHELL = '0b0a5c1e-3f4e-4c2a-9a55-6f1c2d7e8a90'
REGION = '9346116d97f4432b4fa2a3a4b6a1d2ab'
REGION_DASHED = '9346116d-97f4-432b-4fa2-a3a4b6a1d2ab'
FUNCTION = 'd8424dc4-a4a3-c413-f89e-433683f9040b'
# A topology as a bitstream's metadata give it.
SEED_TOPOLOGY = {
    'pf_num': 2, 'vf_num': 2,
    'pf': [{'name': 'pf_1', 'capability': '', 'kpi': '', 'pci_offset': '0',
            'vf': [{'name': 'vf_1', 'pci_offset': '1'}]},
           {'name': 'pf_2', 'capability': '', 'kpi': '', 'pci_offset': '2',
            'vf': [{'name': 'vf_2', 'pci_offset': '3'}]}]}
REQUIRED = ('bs-name', 'bs-uuid', 'vendor', 'board', 'version', 'driver_ver',
            'driver_path', 'function_uuid')
NULLABLE = ('shell_id', 'driver', 'topology', 'description', 'region_uuid',
            'function_name')
TEXT_KEYS = ('bs-name', 'vendor', 'board', 'version', 'driver', 'driver_ver',
             'driver_path', 'description', 'function_name')
UUID_KEYS = ('bs-uuid', 'shell_id', 'region_uuid', 'function_uuid')


def properties(**changes):
    """Valid properties of every standard key, with ``changes`` (key with
    ``_`` for ``-``; None removes it)."""
    values = {'bs-name': 'aes-128', 'bs-uuid': BS_UUID, 'vendor': 'intel',
              'board': 'pac_arria10', 'version': '1.0', 'driver': 'OPAE',
              'driver_ver': '2.1', 'driver_path': '/opt/opae/',
              'topology': json.dumps(SEED_TOPOLOGY, separators=(',', ':')),
              'description': 'AES', 'region_uuid': REGION,
              'function_uuid': FUNCTION, 'function_name': 'aes'}
    for key, value in changes.items():
        key = key.replace('bs_', 'bs-')
        if value is None:
            values.pop(key, None)
        else:
            values[key] = value
    return values


def image(tags=('FPGA',), **changes):
    """A Glance v2 image dict of a bitstream."""
    return {'id': 'e1a5b2c3-0000-4000-8000-000000000001', 'name': 'aes.gbs',
            'tags': list(tags), 'status': 'active', 'size': 1024,
            'checksum': 'c' * 32, 'os_hash_algo': 'sha512',
            'os_hash_value': 'f' * 128, 'disk_format': 'raw',
            **properties(**changes)}


class BitstreamTestCase(base.TestCase):

    def assertProblems(self, expected, props):
        self.assertEqual(expected, bitstream.validate_properties(props))

    def assertInvalid(self, expected, glance_image):
        error = self.assertRaises(bitstream.InvalidBitstream,
                                  bitstream.Bitstream.from_image, glance_image)
        self.assertEqual(expected, error.problems)
        return error


class TestKeys(BitstreamTestCase):

    def test_the_key_table_is_the_standards(self):
        self.assertEqual(REQUIRED + NULLABLE,
                         tuple(sorted((key.name for key in bitstream.KEYS),
                                      key=lambda name: name in NULLABLE)))
        self.assertEqual(set(NULLABLE), {key.name for key in bitstream.KEYS
                                         if key.nullable})
        self.assertEqual(set(UUID_KEYS), {key.name for key in bitstream.KEYS
                                          if key.kind == bitstream.UUID})
        self.assertEqual('FPGA', bitstream.TAG)
        self.assertEqual(255, bitstream.MAX_VALUE_LENGTH)
        self.assertEqual(65535, bitstream.MAX_TOPOLOGY_LENGTH)

    def test_valid_image_gives_every_field(self):
        found = bitstream.Bitstream.from_image(image())
        self.assertEqual(
            ('e1a5b2c3-0000-4000-8000-000000000001', 'aes.gbs', 'aes-128',
             BS_UUID, 'intel', 'pac_arria10', None, '1.0', 'OPAE', '2.1',
             '/opt/opae/', 'AES', REGION_DASHED, FUNCTION, 'aes'),
            (found.image_id, found.name, found.bs_name, found.bs_uuid,
             found.vendor, found.board, found.shell_id, found.version,
             found.driver, found.driver_ver, found.driver_path,
             found.description, found.region_uuid, found.function_uuid,
             found.function_name))
        self.assertEqual(2, found.topology.pf_num)
        self.assertFalse(found.is_partial)

    def test_each_required_key_missing_or_blank(self):
        for key in REQUIRED:
            for value, word in ((None, 'missing'), ('', 'empty'),
                                ('  ', 'empty')):
                with self.subTest(key=key, value=value):
                    props = properties()
                    props[key] = value
                    self.assertProblems(
                        ['%s is required but %s.' % (key, word)], props)
                    del props[key]
                    self.assertProblems(
                        ['%s is required but missing.' % key], props)

    def test_each_nullable_key_may_be_absent_none_or_empty(self):
        for key in NULLABLE:
            for value in (None, '', ' '):
                with self.subTest(key=key, value=value):
                    glance_image = image()
                    glance_image[key] = value
                    found = bitstream.Bitstream.from_image(glance_image)
                    self.assertIsNone(getattr(found, key))
                    del glance_image[key]
                    found = bitstream.Bitstream.from_image(glance_image)
                    self.assertIsNone(getattr(found, key))

    def test_each_text_key_must_be_a_string(self):
        for key in TEXT_KEYS:
            for value, kind in ((1.0, 'a number'), (['a'], 'a list'),
                                (True, 'a boolean')):
                with self.subTest(key=key, value=value):
                    self.assertProblems(
                        ['%s must be a string, got %s.' % (key, kind)],
                        properties(**{key: value}))

    def test_each_text_key_is_at_most_255_characters(self):
        for key in TEXT_KEYS:
            with self.subTest(key=key):
                self.assertProblems([], properties(**{key: 'x' * 255}))
                self.assertProblems(
                    ['%s is 256 characters long; at most 255 are allowed.'
                     % key], properties(**{key: 'x' * 256}))

    def test_uuid_spellings_are_the_dashed_then_the_plain_form(self):
        for given in ('5F1C2D7E8A904C2A9A556F1C2D7E8A90',
                      '5f1c2d7e-8a90-4c2a-9a55-6f1c2d7e8a90'):
            self.assertEqual(('5f1c2d7e-8a90-4c2a-9a55-6f1c2d7e8a90',
                              '5f1c2d7e8a904c2a9a556f1c2d7e8a90'),
                             bitstream.uuid_spellings(given))
        self.assertIsNone(bitstream.uuid_spellings('gzip'))

    def test_uuids_in_both_forms_any_case_come_out_dashed_lower_case(self):
        for value in (REGION, REGION.upper(), REGION_DASHED,
                      REGION_DASHED.upper(), uuid.UUID(REGION)):
            for key in UUID_KEYS:
                with self.subTest(key=key, value=value):
                    found = bitstream.Bitstream.from_image(
                        image(**{key: value}))
                    self.assertEqual(REGION_DASHED,
                                     getattr(found, key.replace('-', '_')))

    def test_bad_uuids(self):
        for value in (REGION[:31], REGION + '0', 'g' * 32,
                      '{%s}' % REGION_DASHED, 'urn:uuid:' + REGION_DASHED,
                      REGION_DASHED.replace('-', '', 1), 42):
            for key in UUID_KEYS:
                with self.subTest(key=key, value=value):
                    self.assertProblems(
                        ['%s must be a UUID (32 hex digits, dashes optional),'
                         ' got %r.' % (key, value)],
                        properties(**{key: value}))

    def test_a_huge_bad_value_is_cut_in_the_message(self):
        [problem] = bitstream.validate_properties(
            properties(bs_uuid='z' * 300))
        self.assertTrue(problem.endswith("got '" + 'z' * 59 + '....'))
        self.assertLess(len(problem), 140)

    def test_other_keys_are_ignored(self):
        props = properties(foo=[1], bs_name_typo=3)
        self.assertProblems([], props)
        self.assertNotIn('foo', bitstream.to_properties(props))

    def test_properties_must_be_a_mapping(self):
        self.assertProblems(['The properties must be a mapping, got list.'],
                            [('bs-name', 'x')])

    def test_shell_id_makes_a_partial_bitstream(self):
        found = bitstream.Bitstream.from_image(image(shell_id=SHELL))
        self.assertTrue(found.is_partial)
        self.assertEqual(SHELL, found.shell_id)


class TestTagAndErrors(BitstreamTestCase):

    def test_missing_tag(self):
        self.assertInvalid(
            ['The image is not tagged FPGA (its tags: none).'], image(tags=()))
        glance_image = image()
        del glance_image['tags']
        self.assertInvalid(
            ['The image is not tagged FPGA (its tags: none).'], glance_image)

    def test_the_tag_is_case_sensitive(self):
        self.assertInvalid(
            ['The image is not tagged FPGA (its tags: fpga, gpu).'],
            image(tags=('fpga', 'gpu')))
        found = bitstream.Bitstream.from_image(image(tags=('gpu', 'FPGA')))
        self.assertEqual('aes-128', found.bs_name)

    def test_several_bad_keys_give_one_sentence_each(self):
        error = self.assertInvalid(
            ['bs-uuid must be a UUID (32 hex digits, dashes optional), got '
             "'nope'.",
             'board is required but missing.',
             'version must be a string, got a number.',
             'topology is not valid JSON: Expecting value: line 1 column 1 '
             '(char 0).',
             'region_uuid must be a UUID (32 hex digits, dashes optional), '
             "got '1234'.",
             'The image is not tagged FPGA (its tags: none).'],
            image(tags=(), bs_uuid='nope', board=None, version=1.0,
                  topology='pf: 1', region_uuid='1234'))
        self.assertEqual(
            'Image e1a5b2c3-0000-4000-8000-000000000001 is not a valid FPGA '
            'bitstream: ' + ' '.join(error.problems), str(error))
        self.assertIsInstance(error, exception.Invalid)
        self.assertEqual(400, error.code)
        self.assertEqual('e1a5b2c3-0000-4000-8000-000000000001',
                         error.kwargs['image_id'])

    def test_image_without_id(self):
        glance_image = image()
        del glance_image['id']
        error = self.assertInvalid(['The image has no id.'], glance_image)
        self.assertTrue(str(error).startswith(
            'The bitstream metadata are not valid: The image has no id.'))

    def test_the_error_rebuilds_from_its_message_and_kwargs(self):
        # What oslo.messaging does on the caller's side of an RPC call.
        error = self.assertInvalid(['board is required but missing.'],
                                   image(board=None))
        again = bitstream.InvalidBitstream(str(error), **error.kwargs)
        self.assertEqual((str(error), error.problems),
                         (str(again), again.problems))


class TestToProperties(BitstreamTestCase):

    def test_normalises_and_drops_nulls(self):
        result = bitstream.to_properties(properties(
            bs_uuid=BS_UUID.replace('-', '').upper(), driver=None,
            description='', region_uuid=uuid.UUID(REGION),
            topology={'pf': [{'name': 'p', 'vf': []}], 'vendor_key': 1}))
        self.assertEqual(BS_UUID, result['bs-uuid'])
        self.assertEqual(REGION_DASHED, result['region_uuid'])
        self.assertNotIn('driver', result)
        self.assertNotIn('description', result)
        self.assertEqual('{"pf":[{"name":"p","vf":[]}],"vendor_key":1}',
                         result['topology'])
        for value in result.values():
            self.assertIsInstance(value, str)

    def test_round_trip_through_an_image(self):
        props = bitstream.to_properties(properties(shell_id=SHELL))
        found = bitstream.Bitstream.from_image(
            {'id': 'i', 'name': None, 'tags': ['FPGA'], **props})
        self.assertEqual(SHELL, found.shell_id)
        self.assertEqual(props, bitstream.to_properties(
            {key.name: props.get(key.name) for key in bitstream.KEYS}))

    def test_refuses_bad_metadata_naming_every_key(self):
        error = self.assertRaises(
            bitstream.InvalidBitstream, bitstream.to_properties,
            properties(vendor=None, function_uuid='f', topology={1, 2}))
        self.assertEqual(
            ['vendor is required but missing.',
             'topology must be a JSON text or object, got set.',
             "function_uuid must be a UUID (32 hex digits, dashes optional), "
             "got 'f'."], error.problems)
        self.assertTrue(str(error).startswith(
            'The bitstream metadata are not valid: vendor is required'))


class TestTopology(BitstreamTestCase):

    def assertTopologyProblem(self, expected, topology):
        self.assertProblems([expected], properties(topology=topology))

    def test_seed_example(self):
        topology = bitstream_topology.parse_topology(json.dumps(SEED_TOPOLOGY))
        self.assertEqual((2, 2), (topology.pf_num, topology.vf_num))
        self.assertEqual(
            [('pf_1', 0, [('vf_1', 1)]), ('pf_2', 2, [('vf_2', 3)])],
            [(pf.name, pf.pci_offset,
              [(vf.name, vf.pci_offset) for vf in pf.vfs])
             for pf in topology.pfs])

    def test_counts_and_offsets_are_optional_vendor_keys_allowed(self):
        topology = bitstream_topology.parse_topology(
            {'pf': [{'name': 'a', 'capability': 'aes', 'kpi': '10G',
                     'lanes': 4, 'vf': [{'name': 'b', 'mdev': True}]}],
             'vendor': 'x'})
        [pf] = topology.pfs
        self.assertEqual(('aes', '10G', None), (pf.capability, pf.kpi,
                                                pf.pci_offset))
        self.assertEqual((1, 1), (topology.pf_num, topology.vf_num))
        self.assertEqual(0, bitstream_topology.parse_topology('{}').pf_num)

    def test_not_json(self):
        self.assertTopologyProblem(
            'topology is not valid JSON: Expecting value: line 1 column 8 '
            '(char 7).', '{"pf":[}')

    def test_wrong_shapes(self):
        cases = [
            ('[]', 'topology must be a JSON object, got a list.'),
            ('"pf"', 'topology must be a JSON object, got a string.'),
            ('{"pf": {}}', 'topology: pf must be a list, got an object.'),
            ('{"pf": [3]}', 'topology: pf[0] must be an object, got a '
             'number.'),
            ('{"pf": [{"name": ""}]}', "topology: pf[0].name must be a "
             "non-empty string, got ''."),
            ('{"pf": [{}]}', 'topology: pf[0].name must be a non-empty '
             'string, got None.'),
            ('{"pf": [{"name": "a", "vf": "b"}]}', 'topology: pf[0].vf must '
             'be a list, got a string.'),
            ('{"pf": [{"name": "a", "vf": [{"name": 7}]}]}', 'topology: '
             'pf[0].vf[0].name must be a non-empty string, got 7.'),
            ('{"pf": [{"name": "a", "vf": [null]}]}', 'topology: '
             'pf[0].vf[0] must be an object, got null.'),
            ('{"pf": [{"name": "a", "kpi": 5}]}', 'topology: pf[0].kpi must '
             'be a string, got a number.'),
            ('{"pf": [{"name": "a", "capability": []}]}', 'topology: '
             'pf[0].capability must be a string, got a list.'),
        ]
        for text, expected in cases:
            with self.subTest(text=text):
                self.assertTopologyProblem(expected, text)

    def test_bad_pci_offsets(self):
        for value in ('-1', '"x"', '-1.5', 'true', '"1.0"', '[0]'):
            text = '{"pf": [{"name": "a", "pci_offset": %s}]}' % value
            with self.subTest(value=value):
                self.assertTopologyProblem(
                    'topology: pf[0].pci_offset must be a non-negative '
                    'integer, got %r.' % json.loads(value), text)
        topology = bitstream_topology.parse_topology(
            '{"pf": [{"name": "a", "pci_offset": 7}]}')
        self.assertEqual(7, topology.pfs[0].pci_offset)

    def test_counts_must_match(self):
        cases = [
            ({'pf_num': 3}, 'topology: pf_num is 3 but 2 physical '
             'functions are listed.'),
            ({'vf_num': 1}, 'topology: vf_num is 1 but 2 virtual '
             'functions are listed.'),
            ({'pf_num': '2'}, "topology: pf_num must be a non-negative "
             "integer, got '2'."),
            ({'vf_num': None}, 'topology: vf_num must be a non-negative '
             'integer, got None.'),
        ]
        for change, expected in cases:
            with self.subTest(change=change):
                self.assertTopologyProblem(expected,
                                           {**SEED_TOPOLOGY, **change})

    def test_pf_and_vf_counts_are_bounded(self):
        pfs = [{'name': 'p%d' % index} for index in range(65)]
        self.assertEqual(64, bitstream_topology.parse_topology({'pf': pfs[:64]}).pf_num)
        error = self.assertRaises(bitstream_topology.TopologyError,
                                  bitstream_topology.parse_topology, {'pf': pfs})
        self.assertEqual('topology: pf has 65 entries; at most 64 are '
                         'allowed.', str(error))
        vfs = [{'name': 'v%d' % index} for index in range(257)]
        self.assertEqual(256, bitstream_topology.parse_topology(
            {'pf': [{'name': 'p', 'vf': vfs[:256]}]}).vf_num)
        error = self.assertRaises(
            bitstream_topology.TopologyError, bitstream_topology.parse_topology,
            {'pf': [{'name': 'p'}, {'name': 'q', 'vf': vfs}]})
        self.assertEqual('topology: pf[1].vf has 257 entries; at most 256 '
                         'are allowed.', str(error))

    def test_a_topology_longer_than_other_values_is_accepted(self):
        topology = {'pf': [{'name': 'p%d' % index} for index in range(20)]}
        text = json.dumps(topology)
        self.assertGreater(len(text), bitstream.MAX_VALUE_LENGTH)
        self.assertEqual(20, bitstream_topology.parse_topology(text).pf_num)
        self.assertProblems([], properties(topology=text))

    def test_the_json_text_is_at_most_65535_characters(self):
        topology = {'pf': [{'name': 'p' * 1100} for _ in range(60)]}
        text = json.dumps(topology)
        self.assertTopologyProblem(
            'topology is %d characters long; at most 65535 are allowed.'
            % len(text), text)
        # A parsed object is measured as the compact JSON Glance would get.
        compact = json.dumps(topology, separators=(',', ':'))
        self.assertTopologyProblem(
            'topology is %d characters long; at most 65535 are allowed.'
            % len(compact), topology)


def bitstream_of(**changes):
    return bitstream.Bitstream.from_image(image(**changes))


INTEL = bitstream_fit.DeviceInfo(vendor_id='0x8086', vendor_name='INTEL',
                             board='pac_arria10', region_id=REGION,
                             loaded_shell=None, name='fpga-0000:10:00.0-r0')


class TestMatching(BitstreamTestCase):

    def test_vendor_by_pci_id(self):
        for wanted in ('0x8086', '0X8086', ' 0x8086 '):
            for device_id in ('0x8086', '8086', 0x8086):
                with self.subTest(wanted=wanted, device_id=device_id):
                    self.assertTrue(bitstream_fit.vendor_matches(
                        wanted, device_id, None))
        self.assertFalse(bitstream_fit.vendor_matches('0x10ee', '0x8086', 'xilinx'))
        self.assertFalse(bitstream_fit.vendor_matches('0x8086', None, 'intel'))

    def test_vendor_by_name_ignoring_case(self):
        for wanted, name in (('intel', 'INTEL'), ('Intel', 'intel'),
                             ('XILINX', 'Xilinx')):
            with self.subTest(wanted=wanted, name=name):
                self.assertTrue(bitstream_fit.vendor_matches(wanted, '0x1', name))
        self.assertFalse(bitstream_fit.vendor_matches('intel', '0x8086', None))
        self.assertFalse(bitstream_fit.vendor_matches('intel', '0x8086',
                                                  'xilinx'))
        # A name is never compared with the id, nor an id with the name.
        self.assertFalse(bitstream_fit.vendor_matches('8086', '0x8086', None))
        self.assertFalse(bitstream_fit.vendor_matches('0x8086', '0x10ee',
                                                  '0x8086'))

    def test_board_ignoring_case(self):
        self.assertTrue(bitstream_fit.board_matches('PAC_ARRIA10', 'pac_arria10'))
        self.assertTrue(bitstream_fit.board_matches('u250', 'U250'))
        self.assertFalse(bitstream_fit.board_matches('u250', 'u280'))
        self.assertFalse(bitstream_fit.board_matches('u250', None))
        self.assertFalse(bitstream_fit.board_matches('u250', ''))

    def test_region_in_either_form(self):
        for wanted in (REGION, REGION_DASHED, REGION_DASHED.upper()):
            for region_id in (REGION, REGION.upper(), REGION_DASHED):
                with self.subTest(wanted=wanted, region_id=region_id):
                    self.assertTrue(bitstream_fit.region_matches(wanted,
                                                             region_id))
        self.assertFalse(bitstream_fit.region_matches(REGION, REGION[:-1] + '0'))
        self.assertFalse(bitstream_fit.region_matches(REGION, None))
        self.assertFalse(bitstream_fit.region_matches(REGION, '0'))
        self.assertTrue(bitstream_fit.region_matches(None, None))
        self.assertTrue(bitstream_fit.region_matches(None, REGION))

    def test_shell(self):
        self.assertTrue(bitstream_fit.shell_matches(None, None))
        self.assertTrue(bitstream_fit.shell_matches(None, SHELL))
        self.assertTrue(bitstream_fit.shell_matches(
            SHELL, SHELL.replace('-', '').upper()))
        self.assertFalse(bitstream_fit.shell_matches(SHELL, None))
        self.assertFalse(bitstream_fit.shell_matches(SHELL, BS_UUID))
        self.assertFalse(bitstream_fit.shell_matches(SHELL, 'fake-shell-1.0'))

    def test_fits(self):
        bitstream_fit.check_fits(bitstream_of(), INTEL)
        bitstream_fit.check_fits(bitstream_of(vendor='0x8086', board='PAC_ARRIA10',
                                          region_uuid=None), INTEL)

    def test_partial_bitstream_needs_its_shell(self):
        partial = bitstream_of(shell_id=SHELL)
        error = self.assertRaises(bitstream.BitstreamMismatch,
                                  bitstream_fit.check_fits, partial, INTEL)
        self.assertEqual(['It is a partial bitstream needing shell %s, but '
                          'no shell is loaded.' % SHELL], error.reasons)
        other = bitstream_fit.DeviceInfo(**{**vars(INTEL),
                                        'loaded_shell': BS_UUID})
        error = self.assertRaises(bitstream.BitstreamMismatch,
                                  bitstream_fit.check_fits, partial, other)
        self.assertEqual(['It is a partial bitstream needing shell %s, but '
                          'shell %r is loaded.' % (SHELL, BS_UUID)],
                         error.reasons)
        loaded = bitstream_fit.DeviceInfo(**{**vars(INTEL),
                                         'loaded_shell': SHELL.upper()})
        bitstream_fit.check_fits(partial, loaded)

    def test_mismatch_names_every_rule(self):
        found = bitstream_of(vendor='xilinx', board='u250',
                             region_uuid=BS_UUID, shell_id=SHELL)
        error = self.assertRaises(bitstream.BitstreamMismatch,
                                  bitstream_fit.check_fits, found, INTEL)
        self.assertEqual(
            ["Its vendor 'xilinx' is neither the device's vendor id "
             "('0x8086') nor its name ('INTEL').",
             "Its board 'u250' is not the device's board ('pac_arria10').",
             "Its region_uuid %s is not the region's id (%r)."
             % (BS_UUID, REGION),
             'It is a partial bitstream needing shell %s, but no shell is '
             'loaded.' % SHELL], error.reasons)
        self.assertEqual(
            'Bitstream e1a5b2c3-0000-4000-8000-000000000001 (aes-128) does '
            'not fit fpga-0000:10:00.0-r0: ' + ' '.join(error.reasons),
            str(error))
        self.assertIsInstance(error, exception.Conflict)
        self.assertEqual(409, error.code)

    def test_unknown_device_facts(self):
        error = self.assertRaises(
            bitstream.BitstreamMismatch, bitstream_fit.check_fits,
            bitstream_of(), bitstream_fit.DeviceInfo(vendor_id=None))
        self.assertEqual(
            ["Its vendor 'intel' is neither the device's vendor id "
             "(unknown) nor its name (unknown).",
             "Its board 'pac_arria10' is not the device's board (unknown).",
             "Its region_uuid %s is not the region's id (unknown)."
             % REGION_DASHED], error.reasons)
        self.assertIn('does not fit the device:', str(error))


class TestDeviceInfoFromRows(BitstreamTestCase):

    def rows(self, fpga_index, region_index):
        """Device, deployable and attributes rows as the conductor keeps
        them for a region of the all-in-one's fake fleet."""
        inventory = fake_inventory.load_inventory(str(FLEET), 'host')
        device = fake_inventory.build_devices(inventory)[fpga_index]
        region = device.deployables[0].children[region_index]
        device_row = types.SimpleNamespace(
            vendor=device.vendor, model=device.model,
            vendor_board_info=json.dumps(device.vendor_board_info))
        deployable_row = types.SimpleNamespace(name=region.name)
        attribute_rows = [types.SimpleNamespace(key=key, value=value)
                          for key, value in region.attributes.items()]
        return device_row, deployable_row, attribute_rows

    def test_fake_fleet_region(self):
        info = bitstream_fit.DeviceInfo.from_rows(
            *self.rows(0, 0), vendor_names=vocabulary.VENDOR_NAMES)
        self.assertEqual(
            bitstream_fit.DeviceInfo(vendor_id='0x8086', vendor_name='INTEL',
                                 board='pac_arria10', region_id=REGION,
                                 name='fpga-0000:10:00.0-region0'), info)
        bitstream_fit.check_fits(bitstream_of(), info)
        self.assertRaises(bitstream.BitstreamMismatch, bitstream_fit.check_fits,
                          bitstream_of(), bitstream_fit.DeviceInfo.from_rows(
                              *self.rows(0, 1)))

    def test_xilinx_card_of_the_fleet(self):
        device, deployable, attributes = self.rows(1, 0)
        info = bitstream_fit.DeviceInfo.from_rows(
            device, deployable, [{attribute.key: attribute.value}
                                 for attribute in attributes],
            vendor_names=vocabulary.VENDOR_NAMES)
        bitstream_fit.check_fits(bitstream_of(vendor='Xilinx', board='U250',
                                          region_uuid=info.region_id), info)

    def test_board_falls_back_to_the_model_shell_from_board_info(self):
        # The Intel driver reports the board as the model.
        device = types.SimpleNamespace(
            vendor='0x8086', model='pac_arria10',
            vendor_board_info='{"shell_id": "%s"}' % SHELL)
        info = bitstream_fit.DeviceInfo.from_rows(
            device, types.SimpleNamespace(name='r'), {'region_id': REGION})
        self.assertEqual(('pac_arria10', SHELL, None, REGION),
                         (info.board, info.loaded_shell, info.vendor_name,
                          info.region_id))
        bitstream_fit.check_fits(bitstream_of(vendor='0x8086', shell_id=SHELL),
                             info)
        broken = types.SimpleNamespace(vendor='0x8086', model='m',
                                       vendor_board_info='{not json')
        info = bitstream_fit.DeviceInfo.from_rows(
            broken, types.SimpleNamespace(name='r'), [])
        self.assertEqual(('m', None, None), (info.board, info.loaded_shell,
                                             info.region_id))
