"""The path parameters of the API: what each takes, checked before routing.

A path parameter is declared by its name in the route table's templates
(``{uuid}``, ``{uuid_or_name}``...) unless its route declares its own
(``Route.parameters``). ``cyborg.api.controllers.v2`` checks every
parameter of a request's route against its declaration before any
controller runs, so that no malformed value reaches the database (a NUL
cannot be a parameter on PostgreSQL): a value that cannot name a row
(``LOOKUPS``) is the 404 a well-formed one naming no row gets, another
declaration's refusal is its 400. ``cyborg.api.openapi`` renders the same
declarations.
"""

from cyborg import exception
from cyborg.api.schemas import declarations

UUID = declarations.Uuid(
    description='A uuid (dashed, or 32 hex digits); any other text names '
                'nothing (404).')
# Programming refuses a malformed uuid with upstream's 400.
PROGRAM_UUID = declarations.Uuid(
    description='A uuid (dashed, or 32 hex digits); any other text is a '
                '400.',
    messages={'type': 'Expected a UUID but received {value}.'})
UUID_OR_NAME = declarations.String(
    min_length=1, storable=True,
    description='A uuid, or (from microversion 2.2) a name.')
# Any other parameter: text a query can take.
TEXT = declarations.String(min_length=1, storable=True)
DEFAULTS = {'uuid': UUID, 'same_uuid': UUID, 'uuid_or_name': UUID_OR_NAME}
# Declarations whose refusal is a 404: the value names no row.
LOOKUPS = (UUID, UUID_OR_NAME, TEXT)
# The resource a parameter names: that of the collection before it, named
# as the database's own 404 names it.
RESOURCES = {
    'devices': 'Device',
    'deployables': 'Deployable',
    'attributes': 'Attribute',
    'device_profiles': 'DeviceProfile',
    'accelerator_requests': 'ARQ',
}
_KEYS = {'same_uuid': 'uuid', 'uuid_or_name': 'name'}


def declaration(route, name):
    """The declaration of path parameter ``name`` of ``route``."""
    return route.parameters.get(name) or DEFAULTS.get(name, TEXT)


def _resource(path, name):
    """The resource of the collection segment nearest before ``{name}``."""
    resource = None
    for segment in path.split('/'):
        if segment == '{%s}' % name:
            return resource
        resource = RESOURCES.get(segment, resource)
    return resource


def check(route, values):
    """Parse each path parameter's value (``{name: value}``) of ``route``.

    :raises: exception.ResourceNotFound (404) for a value that names no
        row; exception.InvalidParameterValue (400) for another refusal
    """
    for name, value in values.items():
        parameter = declaration(route, name)
        try:
            parameter.parse(name, value)
        except exception.InvalidParameterValue:
            if parameter not in LOOKUPS:
                raise
            raise exception.ResourceNotFound(
                resource=_resource(route.path, name) or 'Resource',
                key=_KEYS.get(name, name), value=value) from None
