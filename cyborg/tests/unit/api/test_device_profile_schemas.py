"""Validation of device profile bodies and queries (cyborg.api.schemas.device_profiles)."""

from oslo_utils import uuidutils

from cyborg import exception
from cyborg.api.schemas import device_profiles as schemas
from cyborg.tests import base

BITSTREAM = '4b3a3e1e-1b32-4c5e-9f6a-27d2b3c1a0aa'


def _body(**values):
    profile = {'name': 'fpga', 'groups': [{'resources:FPGA': '1'}]}
    profile.update(values)
    return [profile]


class TestCreateValues(base.TestCase):

    def _refused(self, body, expected):
        error = self.assertRaises(exception.InvalidParameterValue,
                                  schemas.create_values, body)
        self.assertEqual(400, error.code)
        self.assertIn(expected, error.message)
        return error

    def test_a_full_profile_is_normalized(self):
        profiles = schemas.create_values(_body(
            uuid=uuidutils.generate_uuid().upper(), description='d',
            groups=[{'resources:FPGA': '2', 'trait: CUSTOM_A B ': 'required',
                     'accel:bitstream_id': BITSTREAM,
                     'accel:kpi': 'anything at all'},
                    {'resources:CUSTOM_QAT': '1024',
                     'trait:CUSTOM_QAT_GEN2': 'forbidden'}]))

        self.assertEqual(1, len(profiles))
        profile = profiles[0]
        self.assertEqual(profile['uuid'].lower(), profile['uuid'])
        self.assertTrue(uuidutils.is_uuid_like(profile['uuid']))
        self.assertEqual({'resources:FPGA': '2',
                          'trait:CUSTOM_AB': 'required',
                          'accel:bitstream_id': BITSTREAM,
                          'accel:kpi': 'anything at all'},
                         profile['groups'][0])
        self.assertEqual('d', profile['description'])

    def test_description_and_uuid_are_optional(self):
        profile = schemas.create_values(_body(description=None,
                                              uuid=None))[0]

        self.assertEqual({'name': 'fpga', 'description': None,
                          'groups': [{'resources:FPGA': '1'}]}, profile)

    def test_every_standard_accelerator_class_and_custom_ones(self):
        for resource_class in ('FPGA', 'GPU', 'PGPU', 'VGPU', 'CUSTOM_PCI',
                               'CUSTOM_NIC', 'CUSTOM_SSD', 'CUSTOM_X_1'):
            key = 'resources:' + resource_class
            self.assertEqual(
                [{key: '3'}],
                schemas.create_values(_body(groups=[{key: '3'}]))[0]['groups'])

    def test_refused_resource_classes(self):
        for resource_class in ('PCI_DEVICE', 'VCPU', 'CUSTOM_', 'custom_x',
                               'CUSTOM_A-B', '', 'FPGA '):
            self._refused(_body(groups=[{'resources:' + resource_class: '1'}]),
                          'names no accelerator resource class')

    def test_refused_amounts(self):
        for amount in ('0', '-1', '+1', '1.0', ' 1', '', 'one', '1025',
                       '\u0661'):
            self._refused(_body(groups=[{'resources:FPGA': amount}]),
                          'must be an integer from 1 to 1024')

    def test_refused_traits(self):
        for trait in ('HW_CPU_X86_AVX', 'OWNER_CYBORG', 'CUSTOM_lower',
                      'CUSTOM_', 'CUSTOM_A-B'):
            self._refused(_body(groups=[{'trait:' + trait: 'required'}]),
                          'names no custom trait')
        self._refused(_body(groups=[{'trait:CUSTOM_A': 'Required'}]),
                      'must be required or forbidden')

    def test_refused_accel_keys(self):
        self._refused(_body(groups=[{'accel:bitstream_id': 'abc'}]),
                      'must be a Glance image UUID')
        self._refused(_body(groups=[{'accel:': 'abc'}]),
                      'needs a property name')
        self._refused(_body(groups=[{'resources:FPGA': '1',
                                     'accel:bitstream_id': BITSTREAM,
                                     'accel:function_id': 'gzip'}]),
                      'give accel:bitstream_id or accel:function_id, not both')

    def test_refused_shapes(self):
        cases = [
            ({}, 'must be a list of device profiles'),
            ([], 'must be a list of device profiles'),
            (None, 'must be a list of device profiles'),
            ([None], 'device profile 0 must be an object'),
            (_body(id=3), 'Unknown field id in device profile 0'),
            ([{'groups': [{'resources:FPGA': '1'}]}], 'name (a string'),
            (_body(name=''), 'name (a string'),
            (_body(name=['x']), 'name (a string'),
            (_body(name='n' * 256), 'name must be 1 to 255'),
            (_body(name='a.b'), 'name must be 1 to 255'),
            (_body(name='caf\u00e9'), 'name must be 1 to 255'),
            (_body(description=3), 'description of device profile fpga'),
            (_body(description='d' * (schemas.DESCRIPTION_LENGTH + 1)),
             'description of device profile fpga'),
            (_body(uuid='x'), 'uuid of device profile fpga must be a UUID'),
            (_body(uuid=7), 'uuid of device profile fpga must be a UUID'),
            (_body(groups=None), 'groups of device profile fpga must be'),
            (_body(groups=[]), 'groups of device profile fpga must be'),
            (_body(groups='resources:FPGA=1'), 'groups of device profile'),
            (_body(groups=[[]]), 'device profile fpga group 0 must be'),
            (_body(groups=[{}]), 'device profile fpga group 0 must be'),
            (_body(groups=[{'resources:FPGA': None}]),
             'the value of resources:FPGA must be a string, not null'),
            (_body(groups=[{'resources:FPGA': {'a': 'b'}}]),
             'must be a string'),
            (_body(groups=[{'resources:FPGA': '1', 'hw:mem': 'x'}]),
             'unknown key hw:mem'),
            (_body(groups=[{'RESOURCES:FPGA': '1'}]),
             'unknown key RESOURCES:FPGA'),
            (_body(groups=[{'accel:x': 'v' * 256}]),
             'a key is at most 255 characters'),
        ]
        for body, expected in cases:
            self._refused(body, expected)

    def test_groups_too_large_for_the_column(self):
        groups = [{'accel:property_%d' % index: 'v' * 255
                   for index in range(200)} for _ in range(2)]

        self._refused(_body(groups=groups), 'groups of device profile fpga '
                      'are too large')

    def test_several_profiles_and_repeats(self):
        profiles = schemas.create_values(_body() + _body(name='gpu'))
        self.assertEqual(['fpga', 'gpu'],
                         [profile['name'] for profile in profiles])

        self._refused(_body() + _body(), 'name fpga is given more than once')
        same = uuidutils.generate_uuid()
        self._refused(_body(uuid=same) + _body(name='b', uuid=same.upper()),
                      'uuid %s is given more than once' % same)
        # The second profile's own problem is named after it.
        self._refused(_body() + _body(name='gpu', groups=[{'x': 'y'}]),
                      'device profile gpu group 0: unknown key x')


class TestQueries(base.TestCase):

    def test_name_filter_is_a_list_without_repeats(self):
        query = schemas.list_query({'name': 'a, b,a'}, 1000)

        self.assertEqual({'name': ['a', 'b']}, query.filters)

    def test_list_refuses_unknown_and_empty_parameters(self):
        for params in ({'name': ''}, {'name': 'a,'}, {'names': 'a'},
                       {'uuid': 'x'}):
            self.assertRaises(exception.InvalidParameterValue,
                              schemas.list_query, params, 1000)

    def test_delete_refs(self):
        self.assertEqual(['a'], schemas.delete_refs('a', {}))
        self.assertEqual(['a', 'b'], schemas.delete_refs(None,
                                                         {'value': 'a,b,a'}))
        for path_ref, params in ((None, {}), (None, {'value': ''}),
                                 (None, {'value': ' '}),
                                 (None, {'value': ['a', 'b']}),
                                 ('a', {'value': 'b'}),
                                 (None, {'value': 'a', 'name': 'b'}),
                                 ('a,,b', {})):
            self.assertRaises(exception.InvalidParameterValue,
                              schemas.delete_refs, path_ref, params)
