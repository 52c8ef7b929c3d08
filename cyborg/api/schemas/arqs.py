"""Validation of /v2/accelerator_requests requests.

The POST body, the list query (``instance``, ``bind_state``, paging), the
bind/unbind PATCH document and the DELETE query. Every
function raises ``exception.InvalidParameterValue`` (400) naming the
problem, or ``exception.NotAcceptable`` (406) for ``/project_id`` below 2.1.
The values of a bind are checked against the declarations here (the
ARQ's columns), then by ``cyborg.objects.arq_binding``, the validator the
conductor applies to its other callers too; the PATCH document's schema
is ``arq_patch.py``'s, built from the same declarations.
"""

import dataclasses

from cyborg.common import vocabulary
from cyborg import exception
from cyborg.api import microversions
from cyborg.api.schemas import arq_patch
from cyborg.common import columns
from cyborg.api.schemas import declarations
from cyborg.api.schemas import listing
from cyborg.api.schemas import resources
from cyborg.objects import arq_binding

BIND_STATE_RESOLVED = 'resolved'
# The states of a resolved ARQ: its bind has ended one way or the other.
RESOLVED_STATES = tuple(state for state in vocabulary.ARQState.ALL
                        if state not in vocabulary.ARQState.UNRESOLVED)
BIND_PATHS = arq_patch.BIND_PATHS
PROJECT_ID_PATH = arq_patch.PROJECT_ID_PATH
PROJECT_ID_NEEDS_VERSION = ('Request not acceptable. The minimal required API '
                            'version should be 2.1')

_SORT_KEYS = ('uuid', 'state', 'device_profile_name',
              'device_profile_group_id', 'hostname', 'instance_uuid',
              'created_at', 'updated_at')
_BIND_STATE = declarations.Enum(
    (BIND_STATE_RESOLVED,),
    messages={'choice': 'bind_state must be resolved, not {value!r}'})
# The operator views of microversion 2.6: the ARQs holding an attach
# handle of one device, or of one deployable or a deployable below it.
HOLDER_FILTERS = ('device_uuid', 'deployable_uuid')
_HOLDER = declarations.Uuid(normalize=True,
                            extensions={resources.MICROVERSION: '2.6'})
_DESCRIPTIONS = {
    'instance': 'Only the ARQs of this instance.',
    'bind_state': 'With ``instance``: 423 while any of its ARQs is '
                  'still to be resolved (not Bound, BindFailed or '
                  'Deleting). Without ``instance``: only the resolved '
                  'ARQs (Bound, BindFailed or Deleting), as upstream '
                  'lists them.',
    'device_uuid': 'From microversion 2.6: only the ARQs holding an '
                   'attach handle of this device, whatever their state '
                   '(the instances that lose their accelerator if the '
                   'card goes); an unknown device lists none. Below 2.6 '
                   'an unknown parameter (400). Not in upstream Cyborg.',
    'deployable_uuid': 'From microversion 2.6: only the ARQs holding an '
                       'attach handle of this deployable or of one below '
                       'it in its tree, whatever their state; an unknown '
                       'deployable lists none. Below 2.6 an unknown '
                       'parameter (400). Not in upstream Cyborg.',
}

# The newest query, which the route table documents; the one below 2.6 is
# the same without the holder filters.
LISTING = listing.Listing(
    filters={'instance': listing.uuid_value},
    sort_keys=_SORT_KEYS,
    extra=dict({'bind_state': _BIND_STATE},
               **dict.fromkeys(HOLDER_FILTERS, _HOLDER)),
    descriptions=_DESCRIPTIONS)
_LISTING_BEFORE_2_6 = listing.Listing(
    filters={'instance': listing.uuid_value},
    sort_keys=_SORT_KEYS,
    extra={'bind_state': _BIND_STATE},
    descriptions=_DESCRIPTIONS)

CREATE = declarations.Object(
    fields={
        'device_profile_name': declarations.String(
            storable=True,
            description='The profile whose groups the ARQs are made for.',
            messages={'type': 'device_profile_name must be a string, not '
                              '{value!r}'}),
        'device_profile_group_id': declarations.Integer(
            minimum=0,
            column=columns.of('ARQ', 'device_profile_group_id'),
            strings=True,
            description='Only the ARQs of this group (its index in the '
                        'profile).',
            messages=dict.fromkeys(
                ('type', 'minimum', 'maximum'),
                'device_profile_group_id must be a non-negative integer, '
                'not {value!r}')),
        'image_uuid': declarations.Schema(
            {}, parse=lambda name, value, **context: value,
            description='Ignored, as upstream does (clients send it).'),
    },
    required=('device_profile_name',),
    additional=True,
    messages={'type': 'The body must be a JSON object',
              'required': '{field} is required'},
    description='Other keys are ignored, as are nulls.')

# The DELETE query: exactly one of ``arqs`` and ``instance``.
_UUID_ITEM = '[%s]*(?:%s)[%s]*' % (declarations.SPACE,
                                    declarations.UUID_PATTERN,
                                    declarations.SPACE)
ARQ_UUIDS = declarations.String(
    pattern='%s(?:,%s)*' % (_UUID_ITEM, _UUID_ITEM),
    description='The ARQs to delete: comma-separated uuids.',
    messages=dict.fromkeys(('type', 'pattern'),
                           '{name} must be comma-separated ARQ UUIDs, not '
                           '{value!r}'))
DELETE_QUERY = {
    'arqs': ARQ_UUIDS,
    'instance': declarations.Uuid(
        description='Delete every ARQ of this instance (needs a service '
                    'token).'),
}


def list_query(params, max_limit, version):
    """The validated query of GET /v2/accelerator_requests at ``version``.

    ``instance`` becomes the ``instance_uuid`` filter; ``bind_state``
    (only ``resolved``) is in ``extra``: with ``instance`` it asks for the
    instance's ARQs once all are resolved, without one for the resolved
    ARQs (``RESOLVED_STATES``). From 2.6 ``device_uuid`` and
    ``deployable_uuid`` (dashed, lower case) become filters of the same
    names.
    """
    query_listing = LISTING if microversions.supports_fleet_operations(
        version) else _LISTING_BEFORE_2_6
    query = query_listing.parse(params, max_limit)
    if 'instance' in query.filters:
        query.filters['instance_uuid'] = query.filters.pop('instance')
    for name in HOLDER_FILTERS:
        if name in query.extra:
            query.filters[name] = query.extra.pop(name)
    return query


def create_request(body):
    """(device_profile_name, device_profile_group_id) of a POST body.

    Other keys, such as ``image_uuid``, are ignored, as are nulls.
    """
    values = CREATE.parse('body', body)
    return (values['device_profile_name'],
            values.get('device_profile_group_id'))


@dataclasses.dataclass
class Patch:
    """What a bind/unbind PATCH asks for: bindings by ARQ uuid, and unbinds."""

    bindings: dict
    unbinds: list


def _operations(uuid, operations):
    arq_patch.OPERATIONS.check('operations', operations, where=uuid)
    by_path = {}
    ops = set()
    for operation in operations:
        arq_patch.OPERATION.check('operation', operation, where=uuid)
        path = operation.get('path')
        op = arq_patch.OP.parse('op', operation.get('op'), where=uuid)
        arq_patch.PATH.parse('path', path, where=uuid)
        arq_patch.OPERATION_BY_OP[op].check('operation', operation,
                                            where=uuid, op=op, path=path)
        if path in by_path:
            raise listing.invalid('Path %s is given twice for ARQ %s'
                                  % (path, uuid))
        by_path[path] = operation
        ops.add(op)
    if len(ops) > 1:
        raise listing.invalid('The patch of ARQ %s mixes add and remove'
                              % uuid)
    return ops.pop(), by_path


def _binding(uuid, by_path, version):
    """The binding the ``add`` operations ``by_path`` ask for.

    A ``/project_id`` below 2.1 is a 406, once the other values are known
    to be valid.
    """
    arq_binding.check_fields(uuid, [path[1:] for path in by_path])
    for path, operation in by_path.items():
        if 'value' not in operation:
            raise listing.invalid('The add of %s on ARQ %s has no value'
                                  % (path, uuid))
    values = {path[1:]: operation['value']
              for path, operation in by_path.items()}
    too_early = arq_binding.PROJECT_ID in values and \
        not microversions.supports_project_id_in_bind(version)
    if too_early:
        del values[arq_binding.PROJECT_ID]
    for name, value in values.items():
        arq_patch.VALUES[name].parse(name, value, where=uuid)
    binding = arq_binding.checked(uuid, values)
    if too_early:
        raise exception.NotAcceptable(PROJECT_ID_NEEDS_VERSION)
    return binding


def _arq_uuid(key):
    return arq_binding.arq_uuid(arq_patch.ARQ_UUID.parse('uuid', key))


def patch_request(body, version, uuid=None):
    """The Patch of a bind/unbind document keyed by ARQ uuid.

    Each ARQ has either the three ``add`` operations on ``/hostname``,
    ``/device_rp_uuid`` and ``/instance_uuid`` (plus ``/project_id`` from
    2.1), or the three ``remove`` operations. One document binds ARQs or
    unbinds them, not both (each is one transaction of the conductor).
    With ``uuid`` (PATCH .../{uuid}) the document must have that single key.
    """
    if not isinstance(body, dict) or not body:
        raise listing.invalid('The patch must be an object mapping ARQ uuids '
                              'to lists of operations')
    if uuid is not None:
        _arq_uuid(uuid)
        if list(body) != [uuid] and [key.lower() for key in body] != \
                [uuid.lower()]:
            raise listing.invalid('The patch of ARQ %s must have that ARQ as '
                                  'its only key, not %s'
                                  % (uuid, ', '.join(sorted(body))))
    bindings = {}
    unbinds = []
    for key, operations in body.items():
        arq_uuid = _arq_uuid(key)
        if arq_uuid in bindings or arq_uuid in unbinds:
            raise listing.invalid('ARQ %s is given twice' % arq_uuid)
        op, by_path = _operations(arq_uuid, operations)
        if op == 'add':
            bindings[arq_uuid] = _binding(arq_uuid, by_path, version)
        else:
            missing = [path for path in BIND_PATHS if path not in by_path]
            if missing:
                raise listing.invalid('The unbind of ARQ %s lacks %s'
                                      % (arq_uuid, ', '.join(missing)))
            if PROJECT_ID_PATH in by_path:
                raise listing.invalid('The unbind of ARQ %s cannot remove '
                                      '/project_id' % arq_uuid)
            unbinds.append(arq_uuid)
    if bindings and unbinds:
        raise listing.invalid(
            'One patch either binds or unbinds ARQs, not both: it binds %s '
            'and unbinds %s' % (', '.join(sorted(bindings)),
                                ', '.join(sorted(unbinds))))
    return Patch(bindings=bindings, unbinds=unbinds)


def _uuid_list(name, value):
    ARQ_UUIDS.parse(name, listing.single(name, value))
    uuids = [item.strip().lower() for item in value.split(',')]
    return list(dict.fromkeys(uuids))


def delete_request(uuid, params):
    """(arq_uuids, instance_uuid) of a DELETE: exactly one of them is set."""
    unknown = sorted(set(params) - set(DELETE_QUERY))
    if unknown:
        raise listing.invalid('Unknown query parameter %s'
                              % ', '.join(unknown))
    given = [name for name in DELETE_QUERY if name in params]
    if uuid is not None:
        if given:
            raise listing.invalid('DELETE of one ARQ takes no %s'
                                  % ', '.join(given))
        return _uuid_list('uuid', uuid), None
    if len(given) != 1:
        raise listing.invalid('Give exactly one of arqs and instance')
    if given == ['arqs']:
        return _uuid_list('arqs', params['arqs']), None
    instance = listing.single('instance', params['instance'])
    return None, DELETE_QUERY['instance'].parse('instance', instance).lower()

