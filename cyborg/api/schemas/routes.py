"""The route table of the API: every operation, what it takes and answers.

Each ``Route`` names its method and path, the policy rules it enforces
(none for the public documents), the declarations of its query and body
(the very objects its controller validates with), its answers and the
errors it may give. ``cyborg.api.openapi`` renders the OpenAPI document
from this table; the tests hold the table to the application (every
route answers, every protected one enforces its rules).
"""

import dataclasses
import re

from cyborg.api.schemas import arq_patch
from cyborg.api.schemas import arqs
from cyborg.api.schemas import attributes
from cyborg.api.schemas import bitstreams
from cyborg.api.schemas import deployables
from cyborg.api.schemas import device_profiles
from cyborg.api.schemas import devices
from cyborg.api.schemas import drain
from cyborg.api.schemas import fleet
from cyborg.api.schemas import health
from cyborg.api.schemas import history
from cyborg.api.schemas import paths
from cyborg.policies import arq as arq_policies
from cyborg.policies import attribute as attribute_policies
from cyborg.policies import bitstream as bitstream_policies
from cyborg.policies import deployable as deployable_policies
from cyborg.policies import device as device_policies
from cyborg.policies import device_profile as device_profile_policies
from cyborg.policies import fleet as fleet_policies

# The errors every versioned route may answer.
COMMON_ERRORS = (401, 403, 406, 503)
BODY_ERRORS = (400, 413, 415)
OPENAPI_PATH = '/v2/openapi.json'


@dataclasses.dataclass(frozen=True)
class Route:
    """One operation of the API.

    ``query`` maps parameter names to declarations, or is a
    ``listing.Listing``; ``body`` is the declaration of the JSON body;
    ``answers`` maps each success status to the name of a components
    schema (or None: no body); ``errors`` are the other statuses it may
    give. ``policies`` are the rules it enforces (one of them, for
    several); empty for a public route, which needs no token either.
    ``parameters`` declares path parameters other than those of
    ``paths.DEFAULTS``.
    """

    method: str
    path: str
    operation_id: str
    summary: str
    policies: tuple = ()
    query: object = None
    body: object = None
    answers: dict = dataclasses.field(default_factory=dict)
    errors: tuple = ()
    service_token: bool = False
    description: str = ''
    parameters: dict = dataclasses.field(default_factory=dict)
    # It also answers text/html: a page for a browser (which asks for it in
    # Accept), served without a token or a rule as it holds no data.
    html_page: bool = False
    # False: the body may be left out (``body`` says what it holds when
    # sent).
    body_required: bool = True

    @property
    def is_public(self):
        """Whether the route is served without a token or a policy."""
        return not self.policies


def _route(method, path, operation_id, summary, policies, answers,
           errors=(), body=None, **kwargs):
    errors = set(errors) | set(COMMON_ERRORS)
    if body is not None:
        errors |= set(BODY_ERRORS)
    if kwargs.get('query') is not None:
        errors.add(400)
    return Route(method=method, path=path, operation_id=operation_id,
                 summary=summary, policies=tuple(policies), body=body,
                 answers=answers, errors=tuple(sorted(errors)), **kwargs)


def _public(method, path, operation_id, summary, answer, **kwargs):
    errors = (406,) if path.startswith('/v2') else ()
    return Route(method=method, path=path, operation_id=operation_id,
                 summary=summary, answers={200: answer}, errors=errors,
                 **kwargs)


_DEVICE = '/v2/devices/{uuid}'
_DEPLOYABLE = '/v2/deployables/{uuid}'
_ATTRIBUTE = '/v2/attributes/{uuid}'
_PROFILE = '/v2/device_profiles/{uuid_or_name}'
_ARQ = '/v2/accelerator_requests/{uuid}'
_CLEAR_HEALTH = ('From microversion 2.6 (below it an unknown path, 404): '
                 'the %s is healthy again, whatever it was (a failed one '
                 'stays failed until this call), with a ``clear_health`` '
                 'entry in its history naming the caller, and its host\'s '
                 'providers are synced so that Placement offers it again '
                 'unless something else holds it out (its device\'s '
                 'health, a drain, a disable). Clearing a healthy one '
                 'changes nothing. No body, or an empty object. 409 while '
                 'the conductors are pinned below it ([upgrade_levels] '
                 'conductor).')
_HISTORY = ('From microversion 2.5 (below it an unknown path, 404): what '
            'was done to the %s, newest first, a page at a time (``limit``, '
            'and ``marker`` the ``id`` of the last entry of the previous '
            'page). Admins and the service role see every entry, a '
            'project\'s readers and members only those of their own ARQs. '
            'The history takes no other method (405): nothing in the API '
            'changes or deletes an entry.')
_DRAIN = ('From microversion 2.6 (below it an unknown path, 404): no new '
          'bind lands on the %s any more, its bound ARQs keep working. '
          'Placement is told its whole inventory is reserved (existing '
          'allocations unchanged); a bind recorded after the drain fails. '
          'It shows ``drain``: ``draining`` while an ARQ holds one of its '
          'attach handles, ``drained`` once none does. Draining again keeps '
          'the first ``drain_since``. The optional ``reason`` is kept in '
          'the ``drain`` entry of the history. 409 while the conductors are '
          'pinned below RPC 1.6 ([upgrade_levels] conductor).')
_UNDRAIN = ('From microversion 2.6 (below it an unknown path, 404): new '
            'binds may land on the %s again (Placement offers it at once). '
            'Undraining one that is not drained changes nothing (200). The '
            'optional ``reason`` is kept in the ``undrain`` entry of the '
            'history. 409 while the conductors are pinned below RPC 1.6.')

ROUTES = (
    _public('GET', '/', 'listVersions', 'The API versions of the service',
            'VersionDocument'),
    _public('GET', '/v2', 'showVersion', 'API v2 and its microversions',
            'Version'),
    _public('GET', OPENAPI_PATH, 'showOpenAPI',
            'This document: the OpenAPI description of API v2',
            'OpenAPI'),
    # Devices.
    _route('GET', '/v2/devices', 'listDevices', 'List devices',
           [device_policies.LIST], {200: 'DeviceList'},
           query=devices.LISTING),
    _route('GET', _DEVICE, 'showDevice', 'Show a device',
           [device_policies.SHOW], {200: 'Device'}, errors=(404,)),
    _route('PATCH', _DEVICE, 'patchDevice',
           'Enable or disable a device (a JSON patch of its status)',
           [device_policies.ENABLE, device_policies.DISABLE],
           {200: 'Device'}, errors=(404,), body=devices.BODY,
           description='The rule of the status asked for applies: '
                       'cyborg:device:enable or cyborg:device:disable.'),
    _route('POST', _DEVICE + '/disable', 'disableDevice',
           'Put a device in maintenance', [device_policies.DISABLE],
           {200: None}, errors=(404,)),
    _route('POST', _DEVICE + '/enable', 'enableDevice',
           'Take a device out of maintenance', [device_policies.ENABLE],
           {200: None}, errors=(404,)),
    _route('POST', _DEVICE + '/drain', 'drainDevice',
           'Drain a device (from 2.6)', [device_policies.DRAIN],
           {200: 'Device'}, errors=(404, 409), body=drain.BODY,
           body_required=False, description=_DRAIN % 'device'),
    _route('POST', _DEVICE + '/undrain', 'undrainDevice',
           'Undrain a device (from 2.6)', [device_policies.UNDRAIN],
           {200: 'Device'}, errors=(404, 409), body=drain.BODY,
           body_required=False, description=_UNDRAIN % 'device'),
    _route('GET', _DEVICE + '/history', 'listDeviceHistory',
           'The history of a device (from 2.5)', [device_policies.HISTORY],
           {200: 'HistoryList'}, errors=(404,), query=history.LISTING,
           description=_HISTORY % 'device'),
    _route('POST', _DEVICE + '/clear_health', 'clearDeviceHealth',
           'Clear the health of a device (from 2.6)',
           [device_policies.CLEAR_HEALTH], {200: 'Device'}, errors=(404, 409),
           body=health.BODY, body_required=False,
           description=_CLEAR_HEALTH % 'device'),
    # Deployables.
    _route('GET', '/v2/deployables', 'listDeployables', 'List deployables',
           [deployable_policies.LIST], {200: 'DeployableList'},
           query=deployables.LISTING),
    _route('GET', _DEPLOYABLE, 'showDeployable', 'Show a deployable',
           [deployable_policies.SHOW], {200: 'Deployable'}, errors=(404,)),
    _route('GET', _DEPLOYABLE + '/attributes', 'listDeployableAttributes',
           'List the attributes of a deployable (from 2.4)',
           [deployable_policies.LIST_ATTRIBUTES], {200: 'AttributeList'},
           errors=(404,),
           description='From microversion 2.4 (below it an unknown path, '
                       '404): the deployable\'s top-level attributes in '
                       'creation order, each with the attributes nested '
                       'under it in ``children``; no pages.'),
    _route('GET', _DEPLOYABLE + '/attributes/{key}',
           'showDeployableAttribute',
           'Show the attributes with one key of a deployable (from 2.4)',
           [deployable_policies.SHOW_ATTRIBUTE], {200: 'AttributeList'},
           errors=(404,),
           description='From microversion 2.4 (below it an unknown path, '
                       '404): the deployable\'s top-level attributes with '
                       'the key ``{key}`` (usually one), each with the '
                       'attributes nested under it in ``children``. 404 '
                       'names the deployable and key when it has none.'),
    _route('GET', _DEPLOYABLE + '/history', 'listDeployableHistory',
           'The history of a deployable (from 2.5)',
           [deployable_policies.HISTORY], {200: 'HistoryList'},
           errors=(404,), query=history.LISTING,
           description=_HISTORY % 'deployable'),
    _route('POST', _DEPLOYABLE + '/clear_health', 'clearDeployableHealth',
           'Clear the health of a deployable (from 2.6)',
           [deployable_policies.CLEAR_HEALTH], {200: 'Deployable'},
           errors=(404, 409),
           body=health.BODY, body_required=False,
           description=_CLEAR_HEALTH % 'deployable'),
    _route('POST', _DEPLOYABLE + '/drain', 'drainDeployable',
           'Drain a deployable (from 2.6)', [deployable_policies.DRAIN],
           {200: 'Deployable'}, errors=(404, 409), body=drain.BODY,
           body_required=False,
           description=_DRAIN % 'deployable (one region and what is below '
                                'it)'),
    _route('POST', _DEPLOYABLE + '/undrain', 'undrainDeployable',
           'Undrain a deployable (from 2.6)', [deployable_policies.UNDRAIN],
           {200: 'Deployable'}, errors=(404, 409), body=drain.BODY,
           body_required=False, description=_UNDRAIN % 'deployable'),
    _route('PATCH', _DEPLOYABLE + '/program', 'programDeployable',
           'Program a Glance bitstream into a deployable',
           [deployable_policies.PROGRAM], {200: 'Deployable'},
           errors=(404, 409, 502, 504), body=deployables.PROGRAM_BODY,
           parameters={'uuid': paths.PROGRAM_UUID}),
    _route('PATCH', _DEPLOYABLE + '/program/{same_uuid}',
           'programDeployableTwice',
           'Program a deployable (recent openstacksdk\'s URL)',
           [deployable_policies.PROGRAM], {200: 'Deployable'},
           errors=(404, 409, 502, 504), body=deployables.PROGRAM_BODY,
           parameters={'uuid': paths.PROGRAM_UUID,
                       'same_uuid': paths.PROGRAM_UUID},
           description='The same as .../program; the two uuids must be '
                       'the same.'),
    _route('PATCH', _DEPLOYABLE, 'programDeployableBitstream',
           'Program a deployable (its bitstream patched)',
           [deployable_policies.PROGRAM], {200: 'Deployable'},
           errors=(404, 409, 502, 504), body=deployables.BITSTREAM_BODY,
           parameters={'uuid': paths.PROGRAM_UUID},
           description='The same call as .../program, in the form the '
                       'Cyborg API specification first gave it: a JSON '
                       'patch of ``/bitstream`` whose value is the Glance '
                       'image id. Not in upstream Cyborg\'s API.'),
    # Attributes.
    _route('GET', '/v2/attributes', 'listAttributes', 'List attributes',
           [attribute_policies.LIST], {200: 'AttributeList'},
           query=attributes.LISTING),
    _route('POST', '/v2/attributes', 'createAttribute',
           'Add an attribute to a deployable', [attribute_policies.CREATE],
           {201: 'Attribute'}, errors=(404,), body=attributes.BODY),
    _route('GET', _ATTRIBUTE, 'showAttribute', 'Show an attribute',
           [attribute_policies.SHOW], {200: 'Attribute'}, errors=(404,)),
    _route('DELETE', _ATTRIBUTE, 'deleteAttribute', 'Delete an attribute',
           [attribute_policies.DELETE], {204: None}, errors=(404,)),
    # Device profiles.
    _route('GET', '/v2/device_profiles', 'listDeviceProfiles',
           'List device profiles', [device_profile_policies.LIST],
           {200: 'DeviceProfileList'}, query=device_profiles.LISTING),
    _route('POST', '/v2/device_profiles', 'createDeviceProfiles',
           'Create device profiles', [device_profile_policies.CREATE],
           {201: 'DeviceProfileCreated'}, errors=(409,),
           body=device_profiles.BODY),
    _route('DELETE', '/v2/device_profiles', 'deleteDeviceProfiles',
           'Delete device profiles named in ?value=',
           [device_profile_policies.DELETE], {204: None}, errors=(404, 409),
           query=device_profiles.DELETE_QUERY),
    _route('GET', _PROFILE, 'showDeviceProfile',
           'Show a device profile (by name from 2.2)',
           [device_profile_policies.SHOW], {200: 'WrappedDeviceProfile'},
           errors=(404,),
           description='A name below microversion 2.2 is a 406.'),
    _route('DELETE', _PROFILE, 'deleteDeviceProfile',
           'Delete device profiles by uuid or name',
           [device_profile_policies.DELETE], {204: None}, errors=(400, 404,
                                                                   409),
           description='The path holds one uuid or name, or a '
                       'comma-separated list of them; all or none are '
                       'deleted.',
           parameters={'uuid_or_name': device_profiles.PATH_NAMES}),
    # Accelerator requests.
    _route('GET', '/v2/accelerator_requests', 'listARQs', 'List ARQs',
           [arq_policies.LIST], {200: 'ARQList'}, errors=(423,),
           query=arqs.LISTING),
    _route('POST', '/v2/accelerator_requests', 'createARQs',
           'Create the ARQs of a device profile', [arq_policies.CREATE],
           {201: 'ARQList'}, errors=(404,), body=arqs.CREATE),
    _route('PATCH', '/v2/accelerator_requests', 'bindARQs',
           'Bind or unbind ARQs', [arq_policies.UPDATE], {202: None},
           errors=(404, 409), service_token=True, body=arq_patch.BODY),
    _route('DELETE', '/v2/accelerator_requests', 'deleteARQs',
           'Delete ARQs by uuid (?arqs=) or instance (?instance=)',
           [arq_policies.DELETE], {204: None}, errors=(404,),
           query=arqs.DELETE_QUERY,
           description='Exactly one of ``arqs`` and ``instance``. '
                       '``instance``, and a Bound ARQ, need a service '
                       'token.'),
    _route('GET', _ARQ, 'showARQ', 'Show an ARQ', [arq_policies.SHOW],
           {200: 'ARQ'}, errors=(404,)),
    _route('PATCH', _ARQ, 'bindARQ', 'Bind or unbind one ARQ (openstacksdk)',
           [arq_policies.UPDATE], {202: None}, errors=(404, 409),
           service_token=True, body=arq_patch.ITEM_BODY),
    _route('DELETE', _ARQ, 'deleteARQ', 'Delete an ARQ',
           [arq_policies.DELETE], {204: None}, errors=(400, 404),
           parameters={'uuid': arqs.ARQ_UUIDS},
           description='A Bound ARQ needs a service token.'),
    # Bitstreams.
    _route('POST', '/v2/bitstreams/{image_id}/prefetch', 'prefetchBitstream',
           'Put a bitstream into the caches of the hosts it fits (from '
           '2.6)', [bitstream_policies.PREFETCH], {202: 'Prefetch'},
           errors=(400, 404, 409),
           parameters={'image_id': bitstreams.IMAGE_ID},
           description='From microversion 2.6 (below it an unknown path, '
                       '404): the Glance image, looked up with the '
                       'caller\'s token (404 when unknown or not visible, '
                       '400 when its metadata are not a bitstream\'s), is '
                       'sent to the agents of the hosts with an FPGA region '
                       'it fits, which download it into their bitstream '
                       'caches after the answer; the first program or bind '
                       'there then downloads nothing. 409 while agents are '
                       'pinned below prefetching ([upgrade_levels] agent). '
                       'No body.'),
    # The fleet page.
    _route('GET', '/v2/fleet', 'showFleet',
           'The fleet: a page for a browser, its data as JSON',
           [fleet_policies.GET], {200: 'Fleet'}, html_page=True,
           query=fleet.QUERY,
           description='One page of hosts (by name; those whose name '
                       'contains ``host`` when given) with their devices '
                       'and deployable trees, attach handle usage, and '
                       'their ARQs by state (of the caller\'s project '
                       'unless an admin asks) with the newest not yet on a '
                       'host, and the counts over the whole fleet, in '
                       'twelve SQL queries whatever its size. An Accept '
                       'header preferring text/html to application/json (a '
                       'browser\'s) gets the fleet page instead: HTML that '
                       'fetches this JSON every few seconds, served without '
                       'a token or a rule since it holds no data.'),
)


def _template_pattern(path):
    return re.compile(re.sub('{[a-z_]+}', '[^/]+', path))


_TEMPLATES = {}
for _route_entry in ROUTES:
    _TEMPLATES.setdefault(_route_entry.path, set()).add(_route_entry.method)
    # The documents answer HEAD as well; the resources do not.
    if _route_entry.is_public:
        _TEMPLATES[_route_entry.path].add('HEAD')
_PATTERNS = [(_template_pattern(path), methods)
             for path, methods in _TEMPLATES.items()]


def _matcher(path):
    """A pattern of the template ``path`` capturing each parameter."""
    parts = re.split('{([a-z_]+)}', path)
    return re.compile(''.join(
        '(?P<%s>[^/]+)' % part if index % 2 else re.escape(part)
        for index, part in enumerate(parts)))


_MATCHERS = [(route, _matcher(route.path)) for route in ROUTES]


def match(method, path):
    """``(route, {parameter: value})`` of the request ``method path``, or
    None when the table declares no such operation."""
    for route, pattern in _MATCHERS:
        found = pattern.fullmatch(path)
        if found is not None and route.method == method:
            return route, found.groupdict()
    return None


def allowed_methods(path):
    """The methods the table declares for the request ``path``, or None
    when it declares no such path."""
    allowed = set()
    for pattern, methods in _PATTERNS:
        if pattern.fullmatch(path):
            allowed |= methods
    return frozenset(allowed) if allowed else None
