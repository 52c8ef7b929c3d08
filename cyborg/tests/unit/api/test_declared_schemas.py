"""What the document says a request may be is what the API accepts.

Each case is checked twice: by the validator the controller calls and by
the JSON Schema the OpenAPI document gives for the same body or query
parameter; the two verdicts must agree. The rules JSON Schema cannot
state (a name repeated across profiles, a length in bytes beyond the
character limit, the same ARQ in two spellings) are left out here and
named in the document's descriptions.
"""

import json
import re

import jsonschema
import microversion_parse

from cyborg import exception
from cyborg.api import openapi
from cyborg.api.schemas import arqs as arq_schemas
from cyborg.api.schemas import attributes as attribute_schemas
from cyborg.api.schemas import deployables as deployable_schemas
from cyborg.api.schemas import device_profiles as device_profile_schemas
from cyborg.api.schemas import devices as device_schemas
from cyborg.tests import base

U1 = '7c1d3c2a-9f3e-4c1a-8d6b-3e2f1a0b9c8d'
U2 = '2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e'
U3 = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d'
V2_3 = microversion_parse.Version(2, 3)


def _body_schema(method, path):
    operation = openapi.document()['paths'][path][method]
    return operation['requestBody']['content']['application/json']['schema']


def _adds(**extra):
    operations = [{'path': '/hostname', 'op': 'add', 'value': 'compute-1'},
                  {'path': '/device_rp_uuid', 'op': 'add', 'value': U2},
                  {'path': '/instance_uuid', 'op': 'add', 'value': U3}]
    for name, value in extra.items():
        operations.append({'path': '/' + name, 'op': 'add', 'value': value})
    return operations


def _removes():
    return [{'path': path, 'op': 'remove'} for path in arq_schemas.BIND_PATHS]


def _profile(**values):
    profile = {'name': 'fpga', 'groups': [{'resources:FPGA': '1'}]}
    profile.update(values)
    return [profile]


class AgreementMixin:

    def assertAgree(self, schema, validate, cases):
        validator = jsonschema.Draft202012Validator(schema)
        for case in cases:
            try:
                validate(case)
                accepted = True
            except exception.InvalidParameterValue:
                accepted = False
            self.assertEqual(accepted, validator.is_valid(case),
                             'validator %s, schema %s: %s' % (
                                 accepted, not accepted,
                                 json.dumps(case)[:200]))


class TestBodies(AgreementMixin, base.TestCase):

    def test_attribute_bodies(self):
        good = {'deployable_id': 1, 'key': 'rc', 'value': 'FPGA'}
        self.assertAgree(
            _body_schema('post', '/v2/attributes'),
            attribute_schemas.create_values,
            [good, {'attribute': good}, dict(good, value=''),
             dict(good, deployable_id=2 ** 31 - 1),
             dict(good, value='v' * 65535), [good], 'x', {},
             {'attribute': good, 'x': 1}, dict(good, value=None),
             dict(good, deployable_id='1'), dict(good, deployable_id=' 7 '),
             dict(good, deployable_id='-1'), dict(good, deployable_id='x'),
             dict(good, deployable_id='2147483648'),
             dict(good, deployable_id=''), dict(good, deployable_id=True),
             dict(good, deployable_id=-1), dict(good, deployable_id=2 ** 31),
             dict(good, deployable_id=1.5), dict(good, key=''),
             dict(good, key='k' * 256), dict(good, value='v' * 65536),
             dict(good, value=3), dict(good, value='a\x00b'),
             dict(good, colour='blue'), {'attribute': 'x'}])

    def test_device_status_patches(self):
        good = {'path': '/status', 'op': 'replace', 'value': 'disabled'}
        self.assertAgree(
            _body_schema('patch', '/v2/devices/{uuid}'),
            device_schemas.status_patch,
            [[good], [dict(good, value='enabled', reason=None)],
             [dict(good, reason='r' * 255)], [], [good, good], good,
             [dict(good, path='/state')], [dict(good, op='add')],
             [dict(good, value='maintaining')], [dict(good, reason=3)],
             [dict(good, reason='r' * 256)], [dict(good, extra=1)],
             [{'op': 'replace', 'value': 'enabled'}], [None],
             [dict(good, reason='\x00')]])

    def test_program_patches(self):
        good = {'path': '/program', 'op': 'replace',
                'value': [{'image_uuid': U1}]}
        self.assertAgree(
            _body_schema('patch', '/v2/deployables/{uuid}/program'),
            deployable_schemas.program_image_id,
            [[good], [dict(good, op='add')],
             [dict(good, value=[{'image_uuid': U1.replace('-', '')}])],
             [], [good, good], good, [dict(good, op='remove')],
             [dict(good, path='/bitstream')], [dict(good, value=[])],
             [dict(good, value=[{'image_uuid': U1}, {'image_uuid': U1}])],
             [dict(good, value=[{'image_uuid': 'x'}])],
             [dict(good, value=[{'image_uuid': U1, 'x': 1}])],
             [dict(good, value=[{}])], [dict(good, extra=1)],
             [{'path': '/program', 'op': 'add'}], [None]])

    def test_device_profile_bodies(self):
        bitstream = '4b3a3e1e-1b32-4c5e-9f6a-27d2b3c1a0aa'
        cases = [
            _profile(), _profile(description=None, uuid=None),
            _profile(uuid=U1.upper(), description='d'),
            _profile(groups=[{'resources:FPGA': '2',
                              'trait: CUSTOM_A B ': 'required',
                              'accel:bitstream_id': bitstream,
                              'accel:kpi': 'anything'},
                             {'resources:CUSTOM_QAT': '01024',
                              'trait:CUSTOM_X': 'forbidden'}]),
            _profile() + _profile(name='gpu'),
            {}, [], None, [None], _profile(id=3),
            [{'groups': [{'resources:FPGA': '1'}]}], _profile(name=''),
            _profile(name=['x']), _profile(name='n' * 256),
            _profile(name='n' * 255), _profile(name='a.b'),
            _profile(name='caf\u00e9'), _profile(description=3),
            _profile(description='d' * (
                device_profile_schemas.DESCRIPTION_LENGTH + 1)),
            _profile(description='a\x00'), _profile(uuid='x'),
            _profile(uuid=7), _profile(uuid='{%s}' % U1),
            _profile(groups=None), _profile(groups=[]),
            _profile(groups='resources:FPGA=1'), _profile(groups=[[]]),
            _profile(groups=[{}]),
            _profile(groups=[{'resources:FPGA': None}]),
            _profile(groups=[{'resources:FPGA': '1', 'hw:mem': 'x'}]),
            _profile(groups=[{'RESOURCES:FPGA': '1'}]),
            _profile(groups=[{'accel:x': 'v' * 256}]),
            _profile(groups=[{'accel:' + 'k' * 250: 'v'}]),
            _profile(groups=[{'accel:': 'v'}]),
            _profile(groups=[{'accel:bitstream_id': 'abc'}]),
            _profile(groups=[{'accel:bitstream_id': bitstream,
                              'accel:function_id': 'gzip'}]),
        ]
        for resource_class in ('PCI_DEVICE', 'CUSTOM_', 'custom_x',
                               'CUSTOM_A-B', '', 'FPGA ', 'VGPU'):
            cases.append(_profile(groups=[{'resources:' + resource_class:
                                           '1'}]))
        for amount in ('0', '-1', '+1', '1.0', ' 1', '', '1025', '1024',
                       '\u0661', '0' * 250 + '1'):
            cases.append(_profile(groups=[{'resources:FPGA': amount}]))
        for trait in ('HW_CPU_X86_AVX', 'CUSTOM_lower', 'CUSTOM_', ' CUSTOM_ ',
                      'CUSTOM_A-B', ' C U S T O M _ X '):
            cases.append(_profile(groups=[{'trait:' + trait: 'required'}]))
        cases.append(_profile(groups=[{'trait:CUSTOM_A': 'Required'}]))
        self.assertAgree(_body_schema('post', '/v2/device_profiles'),
                         device_profile_schemas.create_values, cases)

    def test_arq_create_bodies(self):
        self.assertAgree(
            _body_schema('post', '/v2/accelerator_requests'),
            arq_schemas.create_request,
            [{'device_profile_name': 'dp'}, {'device_profile_name': ''},
             {'device_profile_name': 'dp', 'image_uuid': None,
              'device_profile_group_id': None, 'other': 1},
             {'device_profile_name': 'dp', 'device_profile_group_id': 2},
             {'device_profile_name': 'dp', 'device_profile_group_id': ' 1 '},
             [], 'dp', {}, {'device_profile_name': None},
             {'device_profile_name': 3},
             {'device_profile_name': 'a\x00'},
             {'device_profile_name': 'dp', 'device_profile_group_id': -1},
             {'device_profile_name': 'dp', 'device_profile_group_id': True},
             {'device_profile_name': 'dp', 'device_profile_group_id': 'x'},
             {'device_profile_name': 'dp', 'device_profile_group_id': '\u00b2'},
             {'device_profile_name': 'dp',
              'device_profile_group_id': 2 ** 31}])

    def test_arq_patches(self):
        adds = _adds()
        cases = [
            {U1: adds}, {U1.upper(): list(reversed(adds))},
            {U1: _removes(), U2: _removes()},
            {U1: _adds(project_id='p1')}, {U1: adds, U2: adds},
            {}, [adds], {'arq': adds}, {U1: []}, {U1: adds[:2]},
            {U1: _removes()[1:]},
            {U1: adds + [{'path': '/state', 'op': 'add', 'value': 'x'}]},
            {U1: adds[:2] + [{'path': '/instance_uuid', 'op': 'remove'}]},
            {U1: adds + adds[:1]},
            {U1: [dict(adds[0], op='replace')] + adds[1:]},
            {U1: [{'path': '/hostname', 'op': 'add'}] + adds[1:]},
            {U1: adds[:1] + [dict(adds[1], value='rp')] + adds[2:]},
            {U1: adds[:2] + [dict(adds[2], value=7)]},
            {U1: [dict(adds[0], value='')] + adds[1:]},
            {U1: [dict(adds[0], value=' \u3000')] + adds[1:]},
            {U1: [dict(adds[0], value='h' * 256)] + adds[1:]},
            {U1: [dict(adds[0], value='a\x00')] + adds[1:]},
            {U1: [dict(adds[0], extra=1)] + adds[1:]},
            {U1: [dict(_removes()[0], value='x')] + _removes()[1:]},
            {U1: _removes() + [{'path': '/project_id', 'op': 'remove'}]},
            {U1: _adds(project_id='')}, {U1: _adds(project_id=None)},
            {U1: adds, U2: _removes()}, {U1: [None] + adds},
        ]
        self.assertAgree(
            _body_schema('patch', '/v2/accelerator_requests'),
            lambda body: arq_schemas.patch_request(body, V2_3), cases)
        self.assertAgree(
            _body_schema('patch', '/v2/accelerator_requests/{uuid}'),
            lambda body: arq_schemas.patch_request(body, V2_3, uuid=U1),
            [{U1: adds}, {U1: adds, U2: adds}, {U1: _removes()}])


class TestQueries(AgreementMixin, base.TestCase):
    """Each query parameter alone, against its parameter schema."""

    def _parameters(self, path, method='get'):
        operation = openapi.document()['paths'][path][method]
        return {parameter['name']: parameter['schema']
                for parameter in operation['parameters']
                if parameter.get('in') == 'query'}

    def assertParameterAgrees(self, path, parse, name, values,
                              method='get'):
        schema = self._parameters(path, method)[name]
        is_list = schema.get('type') == 'array'
        is_integer = schema.get('type') == 'integer'

        def as_json(text):
            # How a client would have sent the value the schema describes.
            if is_integer and re.fullmatch('-?[0-9]+', text):
                return int(text)
            return [text] if is_list else text

        validator = jsonschema.Draft202012Validator(schema)
        for value in values:
            try:
                parse({name: value})
                accepted = True
            except exception.InvalidParameterValue:
                accepted = False
            self.assertEqual(accepted, validator.is_valid(as_json(value)),
                             '%s=%r' % (name, value))

    def test_paging_and_filters(self):
        def parse(params):
            return deployable_schemas.list_query(
                params, 1000, microversion_parse.Version(2, 4))
        path = '/v2/deployables'
        self.assertParameterAgrees(path, parse, 'limit', [
            '1', '1000', '0', '1001', 'x', '', '-1', '+5', ' 5', '5_0'])
        self.assertParameterAgrees(path, parse, 'marker', [
            U1, U1.replace('-', ''), 'x', '{%s}' % U1, ''])
        self.assertParameterAgrees(path, parse, 'sort_dir', [
            'asc', 'desc', 'up', ''])
        self.assertParameterAgrees(path, parse, 'sort_key', [
            'name', 'hostname', 'id', ''])
        self.assertParameterAgrees(path, parse, 'parent_id', [
            '0', '7', '2147483647', '2147483648', '-1', 'root', '',
            '99999999999999999999999999', '١'])
        self.assertParameterAgrees(path, parse, 'name', [
            'x', 'a:b,c', '', 'a\x00'])
        self.assertParameterAgrees(path, parse, 'rp_uuid', [U1, 'rp', ''])
        self.assertParameterAgrees(path, parse, 'attribute', [
            'rc:FPGA', 'rc:', 'rc:a:b', 'rc', ':x', 'k' * 256 + ':v',
            'k\x00:v'])
        self.assertParameterAgrees(path, parse, 'filters', [
            'name:x', 'name:x,parent_id:3', 'parent_id:x', 'colour:x',
            'name', 'name:', 'rp_uuid:' + U1, 'type:FPGA,vendor:0x8086',
            'parent_id:2147483648', 'device_uuid:' + U1, 'device_uuid:x'])
        self.assertParameterAgrees(path, parse, 'programmed', [
            'true', 'false', 'True', 'no', '', '0'])
        self.assertParameterAgrees(path, parse, 'device_uuid', [
            U1, U1.upper(), U1.replace('-', ''), 'fpga', '', U1 + 'x'])
        # As stored: dashed and lower-case, whichever form was given.
        for given in (U1.upper(), U1.replace('-', '')):
            self.assertEqual(U1, parse({'device_uuid': given})
                             .filters['device_uuid'])

    def test_collection_specific_parameters(self):
        self.assertParameterAgrees(
            '/v2/devices', lambda params: device_schemas.list_query(
                params, 1000), 'status',
            ['enabled', 'maintaining', 'disabled', ''])
        self.assertParameterAgrees(
            '/v2/accelerator_requests',
            lambda params: arq_schemas.list_query(
                params, 1000, microversion_parse.Version(2, 6)),
            'bind_state', ['resolved', 'bound', ''])
        for name in ('device_uuid', 'deployable_uuid'):
            self.assertParameterAgrees(
                '/v2/accelerator_requests',
                lambda params: arq_schemas.list_query(
                    params, 1000, microversion_parse.Version(2, 6)),
                name, [U1, U1.upper(), U1.replace('-', ''), 'x', '',
                       U1 + 'x'])
        self.assertParameterAgrees(
            '/v2/device_profiles',
            lambda params: device_profile_schemas.list_query(params, 1000),
            'name', ['a', 'a, b,a', '', 'a,', ' ', 'a,\u3000', 'x\x00'])
        self.assertParameterAgrees(
            '/v2/accelerator_requests',
            lambda params: arq_schemas.delete_request(None, params), 'arqs',
            ['%s, %s' % (U1, U2), U1, '', U1 + ',x', ' %s ' % U1],
            method='delete')
        self.assertParameterAgrees(
            '/v2/attributes',
            lambda params: attribute_schemas.list_query(params, 1000),
            'deployable_id', ['1', '-1', 'x', '2147483648'])
