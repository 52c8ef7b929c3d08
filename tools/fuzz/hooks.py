"""schemathesis hooks of tools/run-fuzz.sh: the known differences between
what the API does and what its OpenAPI document can say.

Loaded by schemathesis (``hooks`` in schemathesis.toml) in .fuzz-venv, so
nothing here imports cyborg. ``filter_failure`` drops a failure only when
it is one of the cases below, each as narrow as the answer allows: the
operation, the check, the status and the API's own message, and why the
document cannot state the rule. Every other failure stands. The JSON
report counts the dropped ones (``filtered``); api-ref/source/errors.inc
("Fuzzing") lists the same cases.
"""

import dataclasses
import json
import os
import re

import schemathesis

MICROVERSION_HEADER = 'openstack-api-version'
SERVICE_TYPE = 'accelerator'
LISTS = ('listDevices', 'listDeployables', 'listAttributes',
         'listDeviceProfiles', 'listARQs')
# The three forms of programming a deployable.
PROGRAMMING = ('programDeployable', 'programDeployableTwice',
               'programDeployableBitstream')


@dataclasses.dataclass(frozen=True)
class Known:
    """A refusal of valid data (``RejectedPositiveData``) by design."""

    name: str
    operations: tuple  # operationIds; empty: any operation
    status: int
    # A regular expression searched in the fault string; its group
    # ``since``, if any, must name a microversion newer than the answer's.
    message: str
    reason: str


# Valid data as the document describes it, refused by rules it cannot state.
REFUSALS = (
    Known('exactly-one-of-arqs-and-instance', ('deleteARQs',), 400,
          r'^Give exactly one of arqs and instance',
          'DELETE /v2/accelerator_requests takes exactly one of arqs and '
          'instance: parameters cannot exclude each other in OpenAPI.'),
    Known('item-patch-key-is-the-url-uuid', ('bindARQ',), 400,
          r'must have that ARQ as its only key',
          'PATCH /v2/accelerator_requests/{uuid}: the key of the body must '
          'be the uuid of the URL, a relation between a path parameter and '
          'a body no schema states.'),
    Known('program-url-repeats-the-uuid', ('programDeployableTwice',), 400,
          r'must repeat the same uuid',
          '.../program/{same_uuid}: the two uuids of the URL must be the '
          'same.'),
    Known('marker-names-a-row', LISTS, 400, r'^Marker \S+ was not found',
          'A marker must name a row of the list: a reference to stored '
          'data, answered 400 as upstream does.'),
    Known('filter-given-twice', LISTS, 400,
          r' is given twice with different values$',
          'A filter given both as a parameter and in filters= must have the '
          'same value: a duplicate across parameters.'),
    Known('operation-from-a-microversion', (), 406,
          r'minimal required API version should be (?P<since>\d+\.\d+)$',
          'An operation or a form of it that exists from a microversion on '
          '(a profile by name from 2.2, a bind\'s /project_id from 2.1): '
          'its description says so, the schema has no per-version '
          'parameters.'),
    Known('image-known-to-glance', PROGRAMMING, 400,
          r'^Image \S+ cannot be used: ',
          'Whether Glance has the image is known to the conductor only (a '
          'conductor-side 400).'),
    Known('only-fpga-regions-program', PROGRAMMING, 400,
          r'^Deployable \S+ is on a \S+ device: only FPGA regions can be '
          r'programmed\.$',
          'Whether the deployable is on an FPGA is stored data (its '
          'device\'s type), known to the conductor (a conductor-side 400).'),
    Known('profile-names-differ', ('createDeviceProfiles',), 400,
          r' is given more than once$',
          'The names of the profiles created at once must differ: '
          'uniqueItems compares whole items, not one field of them.'),
    Known('attribute-trait-or-resource-class', ('createAttribute',), 400,
          r'^Invalid input: \S+( \(\d+ characters\))? must be a standard '
          r'(resource class|trait) ',
          'The value of an rc or trait<N> key must be a resource class or a '
          'trait Placement knows: the conductor checks it against '
          'os-resource-classes and os-traits (a conductor-side 400).'),
    Known('group-index-of-the-profile', ('createARQs',), 400,
          r'^Invalid input: device_profile_group_id must be a group index ',
          'device_profile_group_id must be the index of a group of the '
          'named profile: a reference to stored data (a conductor-side '
          '400).'),
    Known('profile-group-asks-for-accelerators', ('createARQs',), 400,
          r'^Invalid input: device profile \S+( \(\d+ characters\))? asks '
          r'for no accelerator',
          'The profile named must ask for an accelerator (in the group '
          'named): a reference to stored data (a conductor-side 400).'),
    Known('length-in-bytes', (), 400,
          r' must have at most \d+ bytes in UTF-8$',
          'A length in bytes of UTF-8 (the database column\'s): JSON Schema '
          'counts characters; the document has it as x-max-bytes.'),
)


def _fault_string(response):
    try:
        body = json.loads(response.content)
        return json.loads(body['error_message'])['faultstring']
    except (ValueError, KeyError, TypeError):
        return None


def _header(headers, name):
    for key, value in (headers or {}).items():
        if key.lower() == name:
            return value
    return None


def _version(response):
    """The microversion of the answer, as (major, minor), or None."""
    value = _header(response.headers, MICROVERSION_HEADER)
    if isinstance(value, list):
        value = value[0] if value else None
    match = re.fullmatch(r'%s (\d+)\.(\d+)' % SERVICE_TYPE, value or '')
    return (int(match.group(1)), int(match.group(2))) if match else None


def _is_newer(since, response):
    """Whether microversion ``since`` (None: no condition) is newer than
    the answer's."""
    if since is None:
        return True
    version = _version(response)
    return version is not None and \
        version < tuple(int(part) for part in since.split('.'))


def _newer_parameter(case, response, name):
    """Whether ``name`` is a query parameter of the operation that exists
    from a microversion newer than the answer's."""
    for parameter in case.operation.definition.raw.get('parameters', ()):
        since = parameter.get('schema', {}).get('x-openstack-microversion')
        if parameter.get('name') == name and since:
            return _is_newer(since, response)
    return False


def _known_refusal(case, response):
    """The name of the known refusal ``response`` is, or None."""
    fault = _fault_string(response)
    if fault is None:
        return None
    operation = case.operation.definition.raw.get('operationId')
    for known in REFUSALS:
        found = re.search(known.message, fault)
        if (not known.operations or operation in known.operations) and \
                response.status_code == known.status and found and \
                _is_newer(found.groupdict().get('since'), response):
            return known.name
    # A query parameter that exists from a newer microversion than the one
    # asked for is unknown below it (400): its schema names the version in
    # x-openstack-microversion, which schemathesis does not read.
    # The API names every unknown parameter of the request, comma
    # separated: each must be one of a newer microversion.
    unknown = re.fullmatch(r'Unknown query parameter (\S+(?:, \S+)*)', fault)
    if response.status_code == 400 and unknown is not None and all(
            _newer_parameter(case, response, name)
            for name in unknown.group(1).split(', ')):
        return 'parameter-from-a-microversion'
    # The same parameter as a pair of upstream's ``filters=field:value``:
    # the document declares the pairs of the newest microversion.
    pair = re.fullmatch(r"filters must be field:value pairs with a field "
                        r"among [^']*, not '([^:']*):.*'", fault)
    if response.status_code == 400 and pair is not None and \
            _newer_parameter(case, response, pair.group(1)):
        return 'parameter-from-a-microversion'
    return None


def _versions(case):
    """The microversion values of the document, lower case (``2.3``,
    ``latest``, ``accelerator 2.3``...)."""
    schema = case.operation.schema.raw_schema
    parameter = schema['components']['parameters']['Microversion']
    return {value.lower() for value in parameter['schema']['enum']}


def _requested(value):
    """What the API reads of an OpenStack-API-Version value: the version
    asked of this service, None for none (empty, other services only), or
    False when it refuses the value (406)."""
    for item in value.split(','):
        words = item.split()
        if not words:
            continue
        if len(words) == 1:
            return words[0]
        if len(words) == 2:
            if words[0].lower() == SERVICE_TYPE:
                return words[1]
            continue
        return False
    return None


def _is_known_acceptance(case):
    """A negative case whose only invalid part is an OpenStack-API-Version
    header the API reads as the default or as a version of the document's
    enum (empty; other services' versions; another case, spacing or a
    list naming several services): the API guidelines' header, whose
    grammar an enum of the accepted values cannot state."""
    meta = case.meta
    if meta is None:
        return False
    negative = [location for location, component in meta.components.items()
                if component.mode.is_negative]
    if [getattr(location, 'name', str(location)).lower()
            for location in negative] != ['header']:
        return False
    value = _header(case.headers, MICROVERSION_HEADER)
    if not isinstance(value, str):
        return False
    requested = _requested(value)
    return requested is None or (
        requested is not False and requested.lower() in _versions(case))


def _record(name, case, response):
    """Note a dropped failure in $CYBORG_FUZZ_DROPPED (the runner counts
    the first words; the rest shows what was dropped)."""
    path = os.environ.get('CYBORG_FUZZ_DROPPED')
    if path:
        with open(path, 'a', encoding='utf-8') as dropped:
            dropped.write('%s %s %d %s %s\n' % (
                name, case.operation.label, response.status_code,
                json.dumps(_header(case.headers, MICROVERSION_HEADER)),
                json.dumps(_fault_string(response))))


@schemathesis.hook
def filter_failure(context, failure, case, response):
    """Keep every failure but the known ones of this module."""
    kind = type(failure).__name__
    known = None
    if kind == 'RejectedPositiveData':
        known = _known_refusal(case, response)
    elif kind == 'AcceptedNegativeData' and _is_known_acceptance(case):
        known = 'microversion-header-grammar'
    if known is None:
        return True
    _record(known, case, response)
    return False
