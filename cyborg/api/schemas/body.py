"""The JSON body of a request, checked before anything reads it.

Every POST and PATCH body goes through ``json_body``: a request is refused
with a 4xx in Cyborg's error format, before any work, when its body is
larger than ``[api] max_request_body_size`` (413), is sent as another media
type (415), names a charset other than UTF-8, is not UTF-8, is not JSON, or
nests arrays and objects deeper than ``MAX_DEPTH`` (400). A missing
Content-Type is read as JSON (``curl -d`` users forget it; clients send it).
"""

import json

from cyborg import exception

# No request cyborg takes nests deeper than 5 (a profile's groups); the
# decoder's recursion is bounded well before Python's limit.
MAX_DEPTH = 32
# Default of [api] max_request_body_size, in bytes.
DEFAULT_MAX_BODY = 1024 * 1024
_JSON_TYPES = ('application/json',)
_UTF8 = ('utf-8', 'utf8')


class RequestTooLarge(exception.Invalid):
    msg_fmt = ('The request body is larger than %(limit)d bytes '
               '([api] max_request_body_size).')
    code = 413


class UnsupportedMediaType(exception.Invalid):
    msg_fmt = ('The request body must be application/json, not '
               '%(content_type)s.')
    code = 415


# The media types WebOb parses into request arguments.
_FORM_TYPES = ('application/x-www-form-urlencoded', 'multipart/form-data')


def is_form(request):
    """Whether ``request`` says it carries an HTML form (any method)."""
    return request.content_type.lower() in _FORM_TYPES


def _invalid(message):
    return exception.InvalidParameterValue(err=message)


def _read(request, limit):
    """The raw body, at most ``limit`` bytes."""
    length = request.content_length
    if length is not None and length > limit:
        raise RequestTooLarge(limit=limit)
    data = request.body_file.read(limit + 1)
    if len(data) > limit:
        raise RequestTooLarge(limit=limit)
    return data


def _check_media_type(request):
    content_type = request.content_type
    if content_type and content_type.lower() not in _JSON_TYPES and \
            not content_type.lower().endswith('+json'):
        raise UnsupportedMediaType(content_type=content_type)
    charset = request.headers.get('Content-Type', '').lower()
    for parameter in charset.split(';')[1:]:
        name, _, value = parameter.strip().partition('=')
        if name.strip() == 'charset' and \
                value.strip().strip('"') not in _UTF8:
            raise _invalid('The body must be UTF-8; charset %s is not '
                           'supported' % json.dumps(value.strip()))


def _depth(value, limit):
    """Raise when ``value`` nests deeper than ``limit`` (iteratively)."""
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            raise _invalid('The body nests arrays and objects more than %d '
                           'levels deep' % limit)
        pending.extend((child, depth + 1) for child in children)


def _no_constant(name):
    raise ValueError('%s is not a JSON value' % name)


# Where RequestBody (cyborg.api.app) leaves the body it decoded.
ENVIRON_KEY = 'cyborg.json_body'


def json_body(request, max_size=DEFAULT_MAX_BODY):
    """The decoded JSON body of ``request``: the one the API's RequestBody
    middleware checked, else read and checked here (at most ``max_size``
    bytes).

    :raises: RequestTooLarge (413), UnsupportedMediaType (415),
        exception.InvalidParameterValue (400) for an empty, non-UTF-8,
        malformed or too deeply nested body
    """
    if ENVIRON_KEY in request.environ:
        return request.environ[ENVIRON_KEY]
    return decode(request, max_size)


def decode(request, max_size):
    """Read and check the body of ``request`` (see ``json_body``)."""
    _check_media_type(request)
    data = _read(request, max_size)
    # Whoever reads the body next (Pecan looks for arguments) reads it too.
    request.body = data
    if not data.strip():
        raise _invalid('A JSON body is required')
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError as error:
        raise _invalid('The body is not valid UTF-8 (byte %d)'
                       % error.start) from None
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise _invalid('The body nests arrays and objects more than %d '
                       'levels deep' % MAX_DEPTH) from None
    except ValueError as error:
        raise _invalid('The body is not valid JSON: %s' % error) from None
    _depth(value, MAX_DEPTH)
    return value
