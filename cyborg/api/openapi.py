"""The OpenAPI 3.1 document of API v2, rendered from the route table.

Every path, parameter and body schema comes from the declarations the API
validates with (``cyborg.api.schemas.routes`` and the modules it names),
every response from ``cyborg.api.schemas.resources``: nothing here is a
second copy of a rule. ``GET /v2/openapi.json`` serves the document
without a token; ``api-ref/source/openapi.json`` is the same document
checked in, regenerated with::

    python -m cyborg.api.openapi > api-ref/source/openapi.json
"""

import json
import re
import sys

from cyborg.api import microversions
from cyborg.api.schemas import fleet
from cyborg.api.schemas import listing
from cyborg.api.schemas import paths
from cyborg.api.schemas import resources
from cyborg.api.schemas import routes

# The default of [api] max_limit, which bounds ``limit``; the served
# document names the configured one.
DEFAULT_MAX_LIMIT = 1000
OPENAPI_VERSION = '3.1.0'

_ERRORS = {
    400: 'A query parameter, the body or a path segment is invalid; the '
         'message names it.',
    401: 'No valid token (from Keystone\'s middleware).',
    403: 'A policy rule, or the lack of a service token, refuses the '
         'request.',
    404: 'An object named by the request does not exist.',
    405: 'The path does not take this method.',
    406: 'The microversion asked for is not supported (or, for a feature, '
         'too old).',
    409: 'The request conflicts with the objects\' state.',
    413: 'The body is larger than [api] max_request_body_size.',
    415: 'The body is not application/json.',
    423: 'Some ARQs of the instance are not resolved yet (bind_state).',
    502: 'The host\'s agent failed to program the device.',
    503: 'A service cyborg relies on (the database, Placement, Glance) is '
         'unavailable, or the API is too busy; Retry-After says when to '
         'try again.',
    504: 'Programming did not finish in time.',
}
_SUCCESS = {200: 'OK', 201: 'Created', 202: 'Accepted: the work goes on.',
            204: 'Done; no body.'}
_COMPONENT_ANSWERS = {
    'DeviceList': resources.collection('devices', '#/components/schemas/Device'),
    'DeployableList': resources.collection(
        'deployables', '#/components/schemas/Deployable'),
    'AttributeList': resources.collection(
        'attributes', '#/components/schemas/Attribute'),
    'DeviceProfileList': resources.collection(
        'device_profiles', '#/components/schemas/DeviceProfile'),
    'ARQList': resources.collection('arqs', '#/components/schemas/ARQ'),
    'HistoryList': resources.collection(
        'history', '#/components/schemas/HistoryEntry'),
    'WrappedDeviceProfile': resources.wrapped(
        'device_profile', '#/components/schemas/DeviceProfile'),
    'DeviceProfileCreated': {
        'description': 'One profile created: the profile itself; several: '
                       'the list.',
        'oneOf': [{'$ref': '#/components/schemas/DeviceProfile'},
                  {'$ref': '#/components/schemas/DeviceProfileList'}]},
    'OpenAPI': {'type': 'object', 'description': 'This document.'},
}
_VERSION_HEADERS = {
    microversions.MIN_HEADER: 'The oldest microversion served.',
    microversions.MAX_HEADER: 'The newest microversion served.',
    microversions.HEADER: 'The microversion of this answer, as '
                          '``accelerator 2.N``.',
}
_VERSION_VALUES = ['%d.%d' % (microversions.MIN_VERSION.major, minor)
                   for minor in range(microversions.MIN_VERSION.minor,
                                      microversions.MAX_VERSION.minor + 1)]


def _header_name(name):
    return re.sub('[^A-Za-z]', '', name)


def _components():
    schemas = dict(resources.SCHEMAS, **_COMPONENT_ANSWERS, **fleet.SCHEMAS)
    headers = {_header_name(name): {
        'description': description, 'required': name != microversions.HEADER,
        'schema': {'type': 'string'}}
        for name, description in _VERSION_HEADERS.items()}
    headers['RetryAfter'] = {'description': 'Seconds to wait.',
                             'schema': {'type': 'string'}}
    error_responses = {}
    for status, description in _ERRORS.items():
        error_responses[str(status)] = {
            'description': description,
            'content': {'application/json': {
                'schema': {'$ref': '#/components/schemas/Error'}}}}
    error_responses['503']['headers'] = {
        'Retry-After': {'$ref': '#/components/headers/RetryAfter'}}
    version_values = _VERSION_VALUES + ['latest']
    return {
        'schemas': schemas,
        'responses': error_responses,
        'headers': headers,
        'parameters': {'Microversion': {
            'name': microversions.HEADER, 'in': 'header', 'required': False,
            'description': 'The microversion asked for: ``accelerator 2.N`` '
                           '(or the bare ``2.N``, or ``latest``); none means '
                           '%s. Entries naming other services are ignored.'
                           % str(microversions.MIN_VERSION),
            'schema': {'enum': ['%s %s' % (microversions.SERVICE_TYPE, value)
                                for value in version_values]
                       + version_values}}},
        'securitySchemes': {
            'token': {'type': 'apiKey', 'in': 'header',
                      'name': 'X-Auth-Token',
                      'description': 'A Keystone token.'},
            'serviceToken': {'type': 'apiKey', 'in': 'header',
                             'name': 'X-Service-Token',
                             'description': 'A Keystone token of a service '
                                            'user (Nova\'s), with a role of '
                                            '[keystone_authtoken] '
                                            'service_token_roles.'},
        },
    }


def _path_parameters(route):
    parameters = []
    for name in re.findall('{([a-z_]+)}', route.path):
        parameters.append({'name': name, 'in': 'path', 'required': True,
                           'schema': paths.declaration(route, name).schema()})
    return parameters


def _query_parameters(query, max_limit):
    if query is None:
        return []
    if isinstance(query, listing.Listing):
        return query.parameters(max_limit)
    return listing.query_parameters(query,
                                    required=getattr(query, 'required', ()))


def _success(route, status, answer):
    response = {'description': _SUCCESS[status]}
    if answer is not None:
        response['content'] = {'application/json': {
            'schema': {'$ref': '#/components/schemas/%s' % answer}}}
        if route.html_page:
            response['content']['text/html'] = {'schema': {'type': 'string'}}
    if route.path.startswith('/v2'):
        response['headers'] = {name: {'$ref': '#/components/headers/%s'
                                              % _header_name(name)}
                               for name in _VERSION_HEADERS}
    return response


def _operation(route, max_limit):
    operation = {'operationId': route.operation_id, 'summary': route.summary}
    if route.description:
        operation['description'] = route.description
    parameters = _path_parameters(route) + \
        _query_parameters(route.query, max_limit)
    if route.path.startswith('/v2'):
        parameters.append({'$ref': '#/components/parameters/Microversion'})
    if parameters:
        operation['parameters'] = parameters
    if route.body is not None:
        operation['requestBody'] = {
            'required': route.body_required, 'content': {
                'application/json': {'schema': route.body.schema()}}}
    responses = {str(status): _success(route, status, answer)
                 for status, answer in route.answers.items()}
    for status in route.errors:
        responses[str(status)] = {'$ref': '#/components/responses/%d'
                                          % status}
    operation['responses'] = responses
    if route.is_public:
        operation['security'] = []
    else:
        operation['x-openstack-policy'] = list(route.policies)
        if route.service_token:
            operation['security'] = [{'token': [], 'serviceToken': []}]
    return operation


def document(max_limit=DEFAULT_MAX_LIMIT):
    """The OpenAPI document of API v2; ``limit`` is at most ``max_limit``."""
    paths = {}
    for route in routes.ROUTES:
        paths.setdefault(route.path, {})[route.method.lower()] = \
            _operation(route, max_limit)
    return {
        'openapi': OPENAPI_VERSION,
        'info': {
            'title': 'OpenStack Cyborg API',
            'version': '%s-%s' % (microversions.MIN_VERSION,
                                  microversions.MAX_VERSION),
            'description': (
                'The accelerator API v2 (service type ``%s``), '
                'microversions %s to %s (the %s header). Every path also '
                'works without its /v2 prefix. Fields that appear from a '
                'microversion on name it in ``x-openstack-microversion``; '
                'each operation names the policy rules it enforces in '
                '``x-openstack-policy``. Errors carry Cyborg\'s error body, '
                'whose ``error_message`` string holds the JSON fault.'
                % (microversions.SERVICE_TYPE, microversions.MIN_VERSION,
                   microversions.MAX_VERSION, microversions.HEADER)),
            'license': {'name': 'Apache 2.0',
                        'identifier': 'Apache-2.0'},
        },
        'servers': [{
            'url': '{root}',
            'description': 'The service root: [api] public_endpoint, or '
                           'where cyborg-api is mounted.',
            'variables': {'root': {'default': 'http://localhost:6666'}}}],
        'security': [{'token': []}],
        'paths': paths,
        'components': _components(),
    }


def render(doc):
    """``doc`` as the text checked in: sorted keys, two-space indents."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + \
        '\n'


def main():
    """Print the document with the default settings (the checked-in one)."""
    sys.stdout.write(render(document()))


if __name__ == '__main__':
    main()
