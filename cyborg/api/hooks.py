"""Pecan hooks: the request context, the settings a request needs, the
conductor client, the negotiated microversion, and the one place where
errors become Cyborg's error body.

A 4xx message echoes what the request sent (a name, a query value, a
path segment); ``bounded`` cuts each long echo there, in the body and in
the log line, so that a 10 KB name comes back as its first characters,
an ellipsis and its length.

``all_hooks`` builds them from the application's configuration; no hook,
controller, schema or view reads cyborg.conf.CONF while serving a request.
"""

import json
import logging
import re
import threading

import webob
import webob.exc
from oslo_middleware import request_id as request_id_middleware
from pecan import hooks

from cyborg.api import fleet as fleet_page
from cyborg.api import links
from cyborg.api import microversions
from cyborg import context as cyborg_context
from cyborg import exception

LOG = logging.getLogger(__name__)

GENERIC_SERVER_ERROR = ('An unexpected error prevented the server from '
                        'completing the request.')

# An echo longer than MAX_ECHO characters is cut to its first ECHO_HEAD
# and last ECHO_TAIL, with its length; a 4xx message longer than
# MAX_MESSAGE after that (an echo full of spaces) to its first MAX_MESSAGE.
MAX_ECHO = 120
ECHO_HEAD = 60
ECHO_TAIL = 8
MAX_MESSAGE = 2000
# A value quoted as repr() quotes it (after a space, '(', '[', '=' or
# ':', before a space or punctuation, so an apostrophe is no quote), then
# any run of characters without a space, '=' (name=<value>) or '/' (a
# path's segments): what a message echoes.
_QUOTED = re.compile(
    r"""(?<![^\s(\[=:])(?:'(?:[^'\\]|\\.){%(n)d,}'|"(?:[^"\\]|\\.){%(n)d,}")"""
    r"""(?=$|[\s.,;:)\]])""" % {'n': MAX_ECHO + 1})
_RUN = re.compile(r'[^\s=/]{%d,}' % (MAX_ECHO + 1))
# The media types the API answers in: JSON everywhere, the fleet page's
# HTML too on its paths.
SERVED = (fleet_page.JSON,)
FLEET_SERVED = (fleet_page.JSON, fleet_page.HTML)


_TRAILING = re.compile(r'[.,;:)\]]*$')


def _cut(match):
    """An echo of more than MAX_ECHO characters, cut; its length is the
    value's (no quotes, no punctuation after it)."""
    text = match.group()
    after = _TRAILING.search(text).group()
    text = text[:len(text) - len(after)]
    quoted = len(text) > 1 and text[0] == text[-1] and text[0] in '\'"'
    length = len(text) - 2 * quoted
    if length <= MAX_ECHO:
        return text + after
    return '%s\u2026%s (%d characters)%s' % (
        text[:ECHO_HEAD], text[-ECHO_TAIL:], length, after)


def bounded(message):
    """``message`` with each echo of more than MAX_ECHO characters cut to
    its start, an ellipsis, its end and its length; at most MAX_MESSAGE
    characters (and the length) in all."""
    message = _RUN.sub(_cut, _QUOTED.sub(_cut, str(message)))
    if len(message) > MAX_MESSAGE:
        message = '%s\u2026 (%d characters)' % (message[:MAX_MESSAGE],
                                                 len(message))
    return message


def error_response(status, message):
    """A response with Cyborg's error body: ``error_message`` holds JSON text.

    A 4xx message is ``bounded``: its echoes of the request are cut.
    """
    if status < 500:
        message = bounded(message)
    fault = {
        'faultcode': 'Client' if status < 500 else 'Server',
        'faultstring': message,
        'debuginfo': None,
    }
    response = webob.Response(status=status, content_type='application/json',
                              charset='UTF-8')
    response.text = json.dumps({'error_message': json.dumps(fault)})
    return response


def has_service_token(environ, allowed_roles):
    """Whether keystonemiddleware confirmed a service token with one of
    ``allowed_roles`` ([keystone_authtoken] service_token_roles).
    """
    if environ.get('HTTP_X_SERVICE_IDENTITY_STATUS') != 'Confirmed':
        return False
    roles = environ.get('HTTP_X_SERVICE_ROLES') or ''
    token_roles = {role.strip() for role in roles.split(',') if role.strip()}
    return bool(token_roles & set(allowed_roles))


def is_versioned_path(path):
    """Whether ``path`` (relative to the mount point) is a /v2 request."""
    return path == '/v2' or path.startswith('/v2/')


class ContextHook(hooks.PecanHook):
    """Puts a cyborg RequestContext on ``pecan.request.context``.

    It runs first, before routing, so that every log line of the request
    (errors included) carries this request's id. ``service_token_roles``
    are the roles a service token needs to count as one.
    """

    priority = 10

    def __init__(self, service_token_roles):
        super().__init__()
        self._service_token_roles = frozenset(service_token_roles)

    def on_route(self, state):
        environ = state.request.environ
        context = cyborg_context.RequestContext.from_environ(environ)
        # Decided by the context_is_admin rule when first read
        # (RequestContext.check_is_admin): most calls never ask.
        context.is_admin = None
        # Read by the ARQ controller: bind, unbind and some deletes need it.
        context.has_service_token = has_service_token(
            environ, self._service_token_roles)
        state.request.context = context


class SettingsHook(hooks.PecanHook):
    """Puts what the controllers need of the configuration on the request.

    ``request.base_url``: the URL links start with ([api] public_endpoint,
    else the request's own; see ``cyborg.api.links.base_url``), computed
    once per request. ``request.max_limit``: the largest page of a list
    ([api] max_limit).
    """

    priority = 15

    def __init__(self, public_endpoint, max_limit):
        super().__init__()
        self._public_endpoint = public_endpoint
        self._max_limit = max_limit

    def on_route(self, state):
        request = state.request
        request.base_url = links.base_url(request, self._public_endpoint)
        request.max_limit = self._max_limit


class ConductorHook(hooks.PecanHook):
    """Puts the conductor's RPC client on ``pecan.request.conductor``."""

    priority = 30

    def __init__(self, program_timeout=None, version_cap=None):
        """``program_timeout``: [conductor] program_timeout, how long a
        program call may take (the client waits a little longer);
        ``version_cap``: [upgrade_levels] conductor."""
        super().__init__()
        self._program_timeout = program_timeout
        self._version_cap = version_cap
        self._conductor = None
        self._lock = threading.Lock()

    def before(self, state):
        state.request.conductor = self._conductor_api()

    def _conductor_api(self):
        with self._lock:
            if self._conductor is None:
                # Imported on first use: the API package must import, and
                # serve its version documents, without the conductor.
                from cyborg.conductor import rpcapi
                self._conductor = rpcapi.ConductorAPI(
                    program_timeout=self._program_timeout,
                    version_cap=self._version_cap)
            return self._conductor


class MicroversionHook(hooks.PecanHook):
    """Negotiates ``pecan.request.version`` and adds the version headers.

    Only /v2 requests are versioned; the headers go on every /v2 response,
    errors included (a 406 gets the minimum and maximum only).
    """

    priority = 20

    def on_route(self, state):
        request = state.request
        if not is_versioned_path(request.path_info):
            return
        request.version = microversions.parse(
            request.headers.get(microversions.HEADER))

    def after(self, state):
        request = state.request
        if not is_versioned_path(request.path_info):
            return
        response = state.response
        headers = microversions.response_headers(
            getattr(request, 'version', None))
        vary = headers.pop('Vary')
        for name, value in headers.items():
            response.headers[name] = value
        existing = response.headers.get('Vary')
        response.headers['Vary'] = '%s, %s' % (existing, vary) if existing \
            else vary


class ErrorHook(hooks.PecanHook):
    """Turns any error into Cyborg's error body and logs it once.

    A 503 (a service cyborg relies on, such as the database, cannot be
    reached) also says when to try again: Retry-After ``retry_after``
    seconds ([api] retry_after).
    """

    priority = 40

    def __init__(self, retry_after=1):
        super().__init__()
        self._retry_after = retry_after

    def on_error(self, state, error):
        request = state.request
        if isinstance(error, exception.CyborgException):
            status = int(error.code)
            # Not str(error): re-raised from RPC, it ends with the remote
            # traceback, which the client must not see.
            message = error.message
        elif isinstance(error, webob.exc.HTTPException):
            status = error.status_int
            if status < 400:
                # Redirects and the like are responses, not errors.
                return None
            message = _http_error_message(error, request)
        else:
            status = 500
            message = GENERIC_SERVER_ERROR
        log_error(request, status, message, error)
        response = error_response(status, message)
        if status == 503:
            response.headers['Retry-After'] = str(self._retry_after)
        return response

    def after(self, state):
        _wrap_bare_fault(state.response)


def _wrap_bare_fault(response):
    """Put a bare WSME fault (how wsexpose answers errors) into the error body.

    wsexpose turns exceptions into a response itself, so on_error never sees
    them; WSME has logged them already.
    """
    if response.status_int < 400 or response.content_type != 'application/json':
        return
    try:
        body = json.loads(response.body)
    except ValueError:
        return
    if not isinstance(body, dict) or 'faultstring' not in body or \
            'error_message' in body:
        return
    # An exception re-raised from RPC carries the remote traceback.
    message = str(body['faultstring']).split('\nTraceback', 1)[0]
    response.body = error_response(response.status_int, message).body


def _http_error_message(error, request):
    if isinstance(error, webob.exc.HTTPMethodNotAllowed):
        return 'The method %s is not allowed for %s.' % (request.method,
                                                          request.path)
    if isinstance(error, webob.exc.HTTPNotAcceptable):
        return not_acceptable_message(request)
    return error.detail or error.explanation or error.title


def not_acceptable_message(request):
    """Why Pecan answered 406: the Accept header names no media type the
    resource answers in; say which it asked for and which it could have."""
    accept = request.headers.get('Accept', '')
    if request.path_info in fleet_page.PATHS:
        served = '%s answers in %s' % (request.path,
                                       ' or '.join(FLEET_SERVED))
    else:
        served = ('this API answers in %s (and GET /v2/fleet in %s too)'
                  % (' or '.join(SERVED), fleet_page.HTML))
    return ('Not acceptable: the Accept header asks for %r, but %s.'
            % (accept, served))


class _PecanNotAcceptableFilter(logging.Filter):
    """Drop Pecan's own ERROR line for a 406 (naming its controller): a
    client's Accept header is no server error, and ErrorHook logs the
    answer once."""

    def filter(self, record):
        return 'does not support content_type' not in record.getMessage()


logging.getLogger('pecan.core').addFilter(_PecanNotAcceptableFilter())


_CONTROL = re.compile('[\x00-\x1f\x7f-\x9f\u2028\u2029]')


def printable(text):
    """``text`` with control characters escaped (``\\x00``), for a log line:
    a request cannot write a NUL, a newline or a terminal escape into it."""
    return _CONTROL.sub(lambda match: '\\x%02x' % ord(match.group())
                        if ord(match.group()) < 0x100
                        else '\\u%04x' % ord(match.group()), str(text))


def _path(request):
    try:
        return request.path
    except UnicodeDecodeError:
        # Not UTF-8 (app.RequestTarget refuses it): as the server passed it.
        return request.environ.get('SCRIPT_NAME', '') + \
            request.environ.get('PATH_INFO', '')


def log_error(request, status, message, error=None):
    """Log the error answer of ``request`` once, with its request id: 4xx at
    INFO, a 5xx cyborg names at WARNING, any other with its traceback."""
    values = {
        'method': printable(request.method),
        'path': printable(bounded(_path(request))),
        'status': status,
        'message': printable(bounded(message) if status < 500 else message),
        'request_id': request.environ.get(
            request_id_middleware.ENV_REQUEST_ID),
    }
    template = ('%(method)s %(path)s answered %(status)s: %(message)s '
                '(request %(request_id)s)')
    if status < 500:
        LOG.info(template, values)
    elif isinstance(error, exception.CyborgException):
        # A failure cyborg knows and names (a service it relies on is
        # unavailable or failed): the message says it all.
        LOG.warning(template, values)
    else:
        # The traceback is logged here only: the client sees none of it.
        LOG.error(template, values, exc_info=error)


def all_hooks(conf):
    """The hooks of the Pecan app, configured from ``conf``, in the order
    they run before a request.
    """
    return [ContextHook(conf.keystone_authtoken.service_token_roles),
            SettingsHook(conf.api.public_endpoint, conf.api.max_limit),
            MicroversionHook(),
            ConductorHook(conf.conductor.program_timeout,
                          conf.upgrade_levels.conductor),
            ErrorHook(conf.api.retry_after)]

