"""Validation of /v2/accelerator_requests requests.

The POST body, the list query (``instance``, ``bind_state``, paging), the
bind/unbind PATCH document (api-contract.md §4) and the DELETE query. Every
function raises ``exception.InvalidParameterValue`` (400) naming the
problem, or ``exception.NotAcceptable`` (406) for ``/project_id`` below 2.1.
The values of a bind are checked by ``cyborg.objects.arq_binding``, the
validator the conductor applies to its other callers too; this module
checks the document's shape (paths and operations) around them.
"""

import dataclasses

from oslo_utils import uuidutils

from cyborg import exception
from cyborg.api import microversions
from cyborg.api.schemas import listing
from cyborg.objects import arq_binding

BIND_STATE_RESOLVED = 'resolved'
SORT_KEYS = ('uuid', 'state', 'device_profile_name', 'device_profile_group_id',
             'hostname', 'instance_uuid', 'created_at', 'updated_at')
BIND_PATHS = tuple('/' + name for name in arq_binding.BIND_FIELDS)
PROJECT_ID_PATH = '/' + arq_binding.PROJECT_ID
PROJECT_ID_NEEDS_VERSION = ('Request not acceptable. The minimal required API '
                            'version should be 2.1')
_ADD_KEYS = {'path', 'op', 'value'}
_REMOVE_KEYS = {'path', 'op'}


def _bind_state(name, value):
    if listing.single(name, value) != BIND_STATE_RESOLVED:
        raise listing.invalid('bind_state must be resolved, not %r' % (value,))
    return value


def list_query(params, max_limit):
    """The validated query of GET /v2/accelerator_requests.

    ``instance`` becomes the ``instance_uuid`` filter; ``bind_state``
    (only ``resolved``) is in ``extra``, where it means something only with
    ``instance``: without one, the ARQs are listed as upstream does.
    """
    query = listing.parse(
        params, {'instance': listing.uuid_value}, SORT_KEYS, max_limit,
        extra_parsers={'bind_state': _bind_state})
    if 'instance' in query.filters:
        query.filters['instance_uuid'] = query.filters.pop('instance')
    return query


def create_request(body):
    """(device_profile_name, device_profile_group_id) of a POST body.

    Other keys, such as ``image_uuid``, are ignored, as are nulls.
    """
    if not isinstance(body, dict):
        raise listing.invalid('The body must be a JSON object')
    name = body.get('device_profile_name')
    if name is None:
        raise listing.invalid('device_profile_name is required')
    if not isinstance(name, str):
        raise listing.invalid('device_profile_name must be a string, not %r'
                              % (name,))
    group_id = body.get('device_profile_group_id')
    if group_id is not None:
        if isinstance(group_id, str) and group_id.strip().isdigit():
            group_id = int(group_id)
        if isinstance(group_id, bool) or not isinstance(group_id, int) or \
                group_id < 0:
            raise listing.invalid(
                'device_profile_group_id must be a non-negative integer, '
                'not %r' % (group_id,))
    return name, group_id


@dataclasses.dataclass
class Patch:
    """What a bind/unbind PATCH asks for: bindings by ARQ uuid, and unbinds."""

    bindings: dict
    unbinds: list


def _operations(uuid, operations):
    if not isinstance(operations, list) or not operations:
        raise listing.invalid('The patch of ARQ %s must be a non-empty list '
                              'of operations' % uuid)
    by_path = {}
    ops = set()
    for operation in operations:
        if not isinstance(operation, dict):
            raise listing.invalid('Each operation on ARQ %s must be an '
                                  'object' % uuid)
        path = operation.get('path')
        op = operation.get('op')
        if op not in ('add', 'remove'):
            raise listing.invalid('The operation %r on ARQ %s must be add or '
                                  'remove' % (op, uuid))
        if path not in BIND_PATHS + (PROJECT_ID_PATH,):
            raise listing.invalid(
                'Unknown path %r in the patch of ARQ %s; allowed: %s'
                % (path, uuid, ', '.join(BIND_PATHS + (PROJECT_ID_PATH,))))
        allowed = _ADD_KEYS if op == 'add' else _REMOVE_KEYS
        unknown = sorted(set(operation) - allowed)
        if unknown:
            raise listing.invalid('Unknown member %s in the %s of %s on ARQ %s'
                                  % (', '.join(unknown), op, path, uuid))
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
    binding = arq_binding.checked(uuid, values)
    if too_early:
        raise exception.NotAcceptable(PROJECT_ID_NEEDS_VERSION)
    return binding


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
        arq_binding.arq_uuid(uuid)
        if list(body) != [uuid] and [key.lower() for key in body] != \
                [uuid.lower()]:
            raise listing.invalid('The patch of ARQ %s must have that ARQ as '
                                  'its only key, not %s'
                                  % (uuid, ', '.join(sorted(body))))
    bindings = {}
    unbinds = []
    for key, operations in body.items():
        arq_uuid = arq_binding.arq_uuid(key)
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
    uuids = [item.strip() for item in listing.single(name, value).split(',')]
    bad = [item for item in uuids if not uuidutils.is_uuid_like(item)]
    if bad or not uuids:
        raise listing.invalid('%s must be comma-separated ARQ UUIDs, not %r'
                              % (name, value))
    return list(dict.fromkeys(item.lower() for item in uuids))


def delete_request(uuid, params):
    """(arq_uuids, instance_uuid) of a DELETE: exactly one of them is set."""
    unknown = sorted(set(params) - {'arqs', 'instance'})
    if unknown:
        raise listing.invalid('Unknown query parameter %s'
                              % ', '.join(unknown))
    given = [name for name in ('arqs', 'instance') if name in params]
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
    return None, listing.uuid_value('instance', instance).lower()
