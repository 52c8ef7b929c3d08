"""The WSGI application of cyborg-api: middleware around the Pecan app.

``setup_app`` is what cyborg-api, the WSGI entry point (``cyborg.wsgi.api``)
and the all-in-one serve.
"""

import logging
import urllib.parse

import pecan
import webob
from oslo_middleware import cors
from oslo_middleware import healthcheck
from oslo_middleware import http_proxy_to_wsgi
from oslo_middleware import request_id

from cyborg.api import argspecs
from cyborg.api import auth
from cyborg.api.controllers import root
from cyborg.api import hooks
from cyborg.api import responses
from cyborg.api.schemas import body as body_schemas
from cyborg.api import server
from cyborg import conf as cyborg_conf
from cyborg import exception
from cyborg.api import metrics as api_metrics
from cyborg import policies

LOG = logging.getLogger(__name__)


class UnversionedPaths:
    """Serves /<x>... as /v2/<x>... when <x> is neither empty nor ``v2``."""

    def __init__(self, application):
        self._application = application

    def __call__(self, environ, start_response):
        path = environ.get('PATH_INFO', '')
        first_segment = path.lstrip('/').split('/', 1)[0]
        if first_segment and first_segment != 'v2':
            environ['PATH_INFO'] = '/v2/' + path.lstrip('/')
        return self._application(environ, start_response)


class ReleasedLocals:
    """The request and response objects of an answer let go of once it
    is answered.

    Pecan leaves its request and response in the environ (``pecan.locals``)
    and WebOb a request's own attributes (``webob.adhoc_attrs``: the
    response oslo.middleware's request_id made) and its parsed query, while
    those hold the environ: reference cycles, which kept every answer's body (a
    megabyte for 1,000 rows) alive until the garbage collector got to them
    (a 1,000-row list grew the process by a megabyte a request, to 330
    MB), and made each large answer map fresh memory (a third of a
    millisecond of page faults for 1,000 devices). The server sends what
    the application returned; nothing reads either after that.
    """

    KEYS = ('pecan.locals', 'webob.adhoc_attrs', 'webob._parsed_query_vars',
            'webob._parsed_post_vars')

    def __init__(self, application):
        self._application = application

    def __call__(self, environ, start_response):
        try:
            return self._application(environ, start_response)
        finally:
            for key in self.KEYS:
                environ.pop(key, None)


class Healthcheck:
    """Answers /healthcheck with oslo.middleware's healthcheck app."""

    PATH = '/healthcheck'

    def __init__(self, application, conf):
        self._application = application
        # oslo.middleware's healthcheck answers every path it is given.
        self._healthcheck = healthcheck.Healthcheck(None, conf)

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO', '') == self.PATH:
            return self._healthcheck(environ, start_response)
        return self._application(environ, start_response)


class RequestBody:
    """Reads and checks every JSON body before Pecan or a controller does.

    A body that cannot be read (too large, another media type or charset,
    not UTF-8, not JSON, nested too deeply: ``cyborg.api.schemas.body``)
    gets its 4xx in Cyborg's error body here, logged once; a good one is
    decoded once and left in the environ for ``body.json_body``. No
    operation takes a form: a form body on any method is a 415 (Pecan
    would read its fields as arguments), an empty one is no body.
    """

    METHODS = ('POST', 'PUT', 'PATCH')

    def __init__(self, application, max_size):
        self.application = application
        self.max_size = max_size

    def __call__(self, environ, start_response):
        request = webob.Request(environ)
        has_body = bool(request.content_length or request.is_body_readable)
        try:
            if body_schemas.is_form(request):
                if has_body:
                    raise body_schemas.UnsupportedMediaType(
                        content_type=request.content_type)
                # WebOb would parse an empty form into Pecan's arguments,
                # and fail (a 500) on multipart without a boundary.
                del environ['CONTENT_TYPE']
            elif has_body and request.method in self.METHODS:
                environ[body_schemas.ENVIRON_KEY] = body_schemas.decode(
                    request, self.max_size)
        except exception.CyborgException as error:
            hooks.log_error(request, int(error.code), error.message)
            return hooks.error_response(int(error.code), error.message)(
                environ, start_response)
        return self.application(environ, start_response)


class RequestTarget:
    """Refuses a path or query string that is not UTF-8 (400 in Cyborg's
    error body): WebOb, Pecan and the log read both as text, and WebOb's
    own 400 page would answer otherwise."""

    def __init__(self, application):
        self.application = application

    @staticmethod
    def _is_utf8(text, unquote=False):
        # A server passes bytes as latin-1 (PEP 3333): the path decoded,
        # the query string as sent.
        try:
            raw = text.encode('latin-1')
        except UnicodeEncodeError:
            return True  # Text already (not from a PEP 3333 server).
        if unquote:
            raw = urllib.parse.unquote_to_bytes(raw)
        try:
            raw.decode('utf-8')
        except UnicodeDecodeError:
            return False
        return True

    def __call__(self, environ, start_response):
        for part, is_utf8 in (
                ('path', self._is_utf8(environ.get('PATH_INFO', ''))),
                ('query string', self._is_utf8(
                    environ.get('QUERY_STRING', ''), unquote=True))):
            if not is_utf8:
                message = 'The %s is not valid UTF-8.' % part
                hooks.log_error(webob.Request(environ), 400, message)
                return hooks.error_response(400, message)(environ,
                                                          start_response)
        return self.application(environ, start_response)


def setup_pecan_app(conf):
    """The Pecan application with cyborg's hooks configured from ``conf``,
    without any middleware.
    """
    argspecs.install()
    return pecan.make_app(
        root.RootController(),
        hooks=hooks.all_hooks(conf),
        # /v2 and /v2/ are the same resource: no redirect to a canonical one.
        force_canonical=False,
        guess_content_type_from_ext=False,
        custom_renderers={'json': responses.JsonRenderer},
        debug=False)


def setup_app(conf=None, metrics_registry=None):
    """The complete WSGI application configured from ``conf`` (cyborg.conf.CONF).

    ``metrics_registry`` is what GET /metrics serves when [metrics] enabled
    (the all-in-one's holds its conductor's and agent's metrics too);
    cyborg-api's own by default.
    """
    conf = cyborg_conf.CONF if conf is None else conf
    policies.init(conf)
    application = RequestTarget(RequestBody(
        UnversionedPaths(setup_pecan_app(conf)),
        conf.api.max_request_body_size))

    # Built from the inside out; a request goes through them in this order:
    # 1. request_id: every response, errors and 401s included, carries
    #    X-OpenStack-Request-ID, and every log line of the request its id.
    # 2. metrics ([metrics] enabled): GET /metrics answers before (and
    #    without) auth; every other request is timed, 401s included.
    # 3. healthcheck: /healthcheck answers before (and without) auth.
    # 4. HTTPProxyToWSGI ([api] enable_proxy_headers_parsing): the scheme,
    #    host and prefix of a proxy replace the request's, so links built
    #    from the request (cyborg.api.links) point at the proxy.
    # 5. CORS: preflight requests carry no token, so CORS comes before auth.
    # 6. auth: keystonemiddleware (GET /, /v2 and /v2/ pass without a token)
    #    or noauth, which makes every caller an admin with a service token.
    # 7. RequestTarget: a path or query string that is not UTF-8 is a 400.
    # 8. RequestBody: a JSON body that cannot be read is refused (4xx).
    # 9. unversioned paths are rewritten to /v2 paths, then Pecan and its
    #    hooks (context, microversion, conductor, errors) serve the request.
    # Around them all, ReleasedLocals lets go of the request and response
    # objects once the answer is returned.
    if conf.auth_strategy == 'noauth':
        LOG.warning('auth_strategy is noauth: every request acts as an '
                    'administrator with a service token')
        application = auth.NoAuth(application)
    else:
        application = auth.KeystoneAuth(application, conf)
    application = cors.CORS(application, conf)
    if conf.api.enable_proxy_headers_parsing:
        application = http_proxy_to_wsgi.HTTPProxyToWSGI(
            application, {'enable_proxy_headers_parsing': True})
    application = Healthcheck(application, conf)
    if conf.metrics.enabled:
        application = api_metrics.Metrics(application, metrics_registry)
    application = request_id.RequestId(application)
    return ReleasedLocals(application)


def api_server(conf, app=None):
    """The threaded server of cyborg-api on [api] host_ip and port, sized
    by the [api] options; a full queue answers 503 in Cyborg's error body.
    """
    busy = hooks.error_response(
        503, 'cyborg-api has more requests waiting than [api] '
        'max_queued_requests allows; retry later.')
    return server.Server(
        app or setup_app(conf), conf.api.host_ip, conf.api.port,
        threads=conf.api.api_workers, name='cyborg-api',
        backlog=conf.api.backlog, max_queued=conf.api.max_queued_requests,
        retry_after=conf.api.retry_after,
        busy=(busy.content_type, busy.body), option='[api] port')
