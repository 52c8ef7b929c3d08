"""The bind/unbind PATCH of ARQs, declared: its keys, operations and values.

``cyborg.api.schemas.arqs.patch_request`` checks a document with these
declarations; ``schema`` renders the same rules as JSON Schema: per ARQ
uuid, either the ``add`` operations on ``/hostname``, ``/device_rp_uuid``
and ``/instance_uuid`` (and ``/project_id``, microversion 2.1), each path
once, or the three ``remove`` operations; one document binds or unbinds.
"""

from cyborg.common import columns
from cyborg.api.schemas import declarations
from cyborg.objects import arq_binding

BIND_PATHS = tuple('/' + name for name in arq_binding.BIND_FIELDS)
PROJECT_ID_PATH = '/' + arq_binding.PROJECT_ID
PATHS = BIND_PATHS + (PROJECT_ID_PATH,)
# The microversion from which an add may name each path.
PATH_VERSIONS = {PROJECT_ID_PATH: '2.1'}

ARQ_UUID = declarations.Uuid(
    messages={'type': '{value!r} is not an ARQ uuid'})
OP = declarations.Enum(('add', 'remove'), messages={
    'choice': 'The operation {value!r} on ARQ {where} must be add or '
              'remove'})
PATH = declarations.Enum(PATHS, messages={
    'choice': 'Unknown path {value!r} in the patch of ARQ {where}; allowed: '
              '{choices}'})


def _uuid_value(name):
    return declarations.Uuid(messages={
        'type': name + ' of ARQ {where} must be a UUID, not {value!r}'})


_HOSTNAME = ('hostname of ARQ {where} must be a non-empty string of at most '
             '{max_length} characters, not {value!r}')
_PROJECT_ID = 'project_id of ARQ {where} must be a non-empty string, not ' \
    '{value!r}'
_UNSTORABLE = 'must not contain NUL characters or unpaired surrogates'
# The value each add sets, checked as the ARQ's column holds it.
VALUES = {
    'hostname': declarations.String(
        column=columns.of('ARQ', 'hostname'),
        # Not blank: something but spaces (as str.strip() sees them).
        pattern='[%s]*[^%s][\\s\\S]*' % (declarations.SPACE,
                                        declarations.SPACE),
        messages=dict(dict.fromkeys(('type', 'empty', 'length', 'pattern'),
                                    _HOSTNAME),
                      storable='hostname of ARQ {where} ' + _UNSTORABLE)),
    'device_rp_uuid': _uuid_value('device_rp_uuid'),
    'instance_uuid': _uuid_value('instance_uuid'),
    arq_binding.PROJECT_ID: declarations.String(
        min_length=1, column=columns.of('ARQ', 'project_id'),
        messages=dict(dict.fromkeys(('type', 'empty', 'length'), _PROJECT_ID),
                      storable='project_id of ARQ {where} ' + _UNSTORABLE)),
}

OPERATIONS = declarations.Array(
    declarations.Schema({}), min_items=1,
    messages={'type': 'The patch of ARQ {where} must be a non-empty list '
                      'of operations'})
# Its members are checked once its op is known (OPERATION_BY_OP).
OPERATION = declarations.Object(
    fields={'path': PATH, 'op': OP, 'value': declarations.Schema({})},
    additional=True,
    messages={'type': 'Each operation on ARQ {where} must be an object'})
_UNKNOWN_MEMBER = 'Unknown member {unknown} in the {op} of {path} on ARQ ' \
    '{where}'
OPERATION_BY_OP = {
    'add': declarations.Object(
        fields={'path': PATH, 'op': OP, 'value': declarations.Schema({})},
        messages={'unknown': _UNKNOWN_MEMBER}),
    'remove': declarations.Object(
        fields={'path': PATH, 'op': OP},
        messages={'unknown': _UNKNOWN_MEMBER}),
}


def _operation(op, path):
    fields = {'path': {'const': path}, 'op': {'const': op}}
    if op == 'add':
        fields['value'] = VALUES[path[1:]].schema()
    schema = {'type': 'object', 'properties': fields,
              'required': list(fields), 'additionalProperties': False}
    if op == 'add' and path in PATH_VERSIONS:
        schema['x-openstack-microversion'] = PATH_VERSIONS[path]
        schema['description'] = ('From microversion %s, and by an '
                                 'administrator only; below it a 406.'
                                 % PATH_VERSIONS[path])
    return schema


def _once_each(paths, optional=()):
    return [{'contains': {'type': 'object', 'properties': {
                'path': {'const': path}}, 'required': ['path']},
             'minContains': 0 if path in optional else 1,
             'maxContains': 1}
            for path in paths]


def operations_schema(op):
    """The schema of the operations on one ARQ, all ``op``."""
    paths = PATHS if op == 'add' else BIND_PATHS
    return {
        'type': 'array',
        'minItems': len(BIND_PATHS),
        'maxItems': len(paths),
        'items': {'oneOf': [_operation(op, path) for path in paths]},
        'allOf': _once_each(paths, optional=(PROJECT_ID_PATH,)),
    }


def schema(single=False):
    """The schema of the document; ``single``: of PATCH .../{uuid}, whose
    only key is that uuid."""
    document = {
        'type': 'object',
        'minProperties': 1,
        'propertyNames': ARQ_UUID.schema(),
        'anyOf': [{'additionalProperties': operations_schema('add'),
                   'title': 'bind'},
                  {'additionalProperties': operations_schema('remove'),
                   'title': 'unbind'}],
        'description': 'ARQ uuids (each once, whatever its case) to their '
                       'operations: the adds that bind an ARQ or the '
                       'removes that unbind it, each path once; one '
                       'document binds ARQs or unbinds them.',
    }
    if single:
        document['maxProperties'] = 1
        document['description'] += ' Its only key is the uuid of the URL.'
    return document


BODY = declarations.Schema(schema())
ITEM_BODY = declarations.Schema(schema(single=True))
