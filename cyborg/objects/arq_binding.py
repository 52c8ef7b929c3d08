"""The one validator of an ARQ binding: what a bind writes into an ARQ.

A binding is the host, the device's resource provider and the instance an
ARQ is bound to, plus optionally the project the ARQ moves to. The API
(``cyborg.api.schemas.arqs``, its 400s) and the conductor's ARQ workflows
(``cyborg.conductor.arqs``, for every other RPC caller) both validate with
the functions here, so a binding is valid or not whoever sends it. Who may
set ``project_id`` is a policy, not a shape: see
``cyborg.policies.arq.check_project_ids``.

Why here, in a module of its own next to ``cyborg.objects.arq``: the rules
are those of the ARQ's fields, and the objects are the layer both sides may
import (the API must not import the conductor, the conductor has no reason
to import the API). It is not in ``cyborg.objects.arq`` because that module
loads the database queries, and request validation needs none: the API's
schemas stay pure functions of the request, testable without a database.
"""

from oslo_utils import uuidutils

from cyborg.common import columns
from cyborg import exception

# The fields every bind sets, and the one it may set besides.
BIND_FIELDS = ('hostname', 'device_rp_uuid', 'instance_uuid')
PROJECT_ID = 'project_id'
UUID_FIELDS = ('device_rp_uuid', 'instance_uuid')
# The sizes of the ARQ's hostname and project_id columns.
HOSTNAME_LENGTH = columns.of('ARQ', 'hostname').max_length
PROJECT_ID_LENGTH = columns.of('ARQ', 'project_id').max_length


def carries(arq, binding):
    """Whether ``arq`` (the ARQ's fields as attributes) holds exactly
    ``binding`` (as ``checked`` returns it); a bind keeps it on the ARQ
    whether it ends Bound or BindFailed."""
    return all(getattr(arq, name) == value for name, value in binding.items())


def _invalid(message):
    return exception.InvalidParameterValue(err=message)


def arq_uuid(value):
    """``value`` as the uuid of an ARQ, in lower case (as stored).

    :raises: exception.InvalidParameterValue (400)
    """
    if not isinstance(value, str) or not uuidutils.is_uuid_like(value):
        raise _invalid('%r is not an ARQ uuid' % (value,))
    return value.lower()


def check_fields(uuid, names):
    """400 unless ``names`` include every field of BIND_FIELDS.

    The fields are named as the paths of the bind document
    Nova sends, ``/hostname`` and so on.

    :raises: exception.InvalidParameterValue (400)
    """
    missing = [name for name in BIND_FIELDS if name not in names]
    if missing:
        raise _invalid('The bind of ARQ %s lacks %s'
                       % (uuid, ', '.join('/' + name for name in missing)))


def checked(uuid, values):
    """The binding of ARQ ``uuid`` that ``values`` (field to value) asks for.

    Returns ``hostname``, ``device_rp_uuid`` and ``instance_uuid`` (uuids
    in lower case), and ``project_id`` when ``values`` has it.

    :raises: exception.InvalidParameterValue (400) naming the ARQ and the
        field at fault
    """
    check_fields(uuid, values)
    unknown = sorted(set(values) - set(BIND_FIELDS) - {PROJECT_ID})
    if unknown:
        raise _invalid('Unknown field %s in the bind of ARQ %s'
                       % (', '.join(unknown), uuid))
    hostname = values['hostname']
    if not isinstance(hostname, str) or not hostname.strip() or \
            len(hostname) > HOSTNAME_LENGTH:
        raise _invalid('hostname of ARQ %s must be a non-empty string of at '
                       'most %d characters, not %r'
                       % (uuid, HOSTNAME_LENGTH, hostname))
    binding = {'hostname': hostname}
    for name in UUID_FIELDS:
        value = values[name]
        if not isinstance(value, str) or not uuidutils.is_uuid_like(value):
            raise _invalid('%s of ARQ %s must be a UUID, not %r'
                           % (name, uuid, value))
        binding[name] = value.lower()
    if PROJECT_ID in values:
        project_id = values[PROJECT_ID]
        if not isinstance(project_id, str) or not project_id or \
                len(project_id) > PROJECT_ID_LENGTH:
            raise _invalid('project_id of ARQ %s must be a non-empty '
                           'string, not %r' % (uuid, project_id))
        binding[PROJECT_ID] = project_id
    return binding


def checked_all(bindings):
    """``bindings`` (ARQ uuid to field values) with every binding checked.

    The form the conductor's bind takes over RPC, where a ``project_id`` of
    None means none (the ARQ keeps its project); keys come back in lower
    case.

    :raises: exception.InvalidParameterValue (400) for the first problem
    """
    if not isinstance(bindings, dict) or not bindings:
        raise _invalid('bindings must map ARQ uuids to their bindings')
    result = {}
    for key, values in bindings.items():
        uuid = arq_uuid(key)
        if uuid in result:
            raise _invalid('ARQ %s is given twice' % uuid)
        if not isinstance(values, dict):
            raise _invalid('The binding of ARQ %s must be an object, not %r'
                           % (uuid, values))
        if values.get(PROJECT_ID, '') is None:
            values = {name: value for name, value in values.items()
                      if name != PROJECT_ID}
        result[uuid] = checked(uuid, values)
    return result
