"""cyborg-api's metrics: ``GET /metrics`` and the timing of every request.

``cyborg.api.app`` puts ``Metrics`` around the application when [metrics]
enabled. Requests are labelled by the route table's template of their path
(``cyborg.api.schemas.routes``), never the path itself, so that the number
of series stays bounded whatever URLs clients send.
"""

import re
import time

import prometheus_client

from cyborg.api import hooks
from cyborg.api.schemas import routes
from cyborg import metrics

PATH = '/metrics'
HEALTHCHECK_PATH = '/healthcheck'
# The label of a path no route of the table declares (a 404 or 405).
UNMATCHED = 'unmatched'
METHODS = frozenset(('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE',
                     'OPTIONS'))

REGISTRY = metrics.process_registry()

REQUEST_SECONDS = prometheus_client.Histogram(
    'cyborg_api_request_duration_seconds',
    'Time cyborg-api took to answer a request, by method, route template '
    'and status code.',
    ['method', 'route', 'status'], registry=REGISTRY)
IN_FLIGHT = prometheus_client.Gauge(
    'cyborg_api_requests_in_flight',
    'Requests cyborg-api is answering now.',
    registry=REGISTRY, multiprocess_mode='livesum')


def scrape_registry():
    """What a scrape of cyborg-api reads."""
    return metrics.scrape_registry(REGISTRY)


def _pattern(template):
    parts = re.split('{[a-z_]+}', template)
    return re.compile('[^/]+'.join(re.escape(part) for part in parts))


# Templates without parameters first: a literal path wins.
_TEMPLATES = [(_pattern(template), template) for template in sorted(
    {route.path for route in routes.ROUTES},
    key=lambda template: (template.count('{'), template))]


def route_of(path):
    """The route table's template matching ``path``, or UNMATCHED.

    Unversioned paths are read as cyborg-api serves them, as /v2 paths.
    """
    if path == HEALTHCHECK_PATH:
        return path
    path = '/' + path.strip('/')
    first_segment = path[1:].split('/', 1)[0]
    if first_segment and first_segment != 'v2':
        path = '/v2' + path
    for pattern, template in _TEMPLATES:
        if pattern.fullmatch(path):
            return template
    return UNMATCHED


class Metrics:
    """Answers GET /metrics and times every other request.

    /metrics needs no token (it sits outside auth, like /healthcheck):
    operators restrict it by network. In multiprocess mode
    (PROMETHEUS_MULTIPROC_DIR, several uwsgi workers) a scrape adds up
    what every worker wrote.
    """

    def __init__(self, application, registry=None):
        """``registry`` is what a scrape reads (``scrape_registry()`` by
        default)."""
        self._application = application
        self._metrics_app = prometheus_client.make_wsgi_app(
            registry if registry is not None else scrape_registry())

    def __call__(self, environ, start_response):
        path = environ.get('PATH_INFO', '')
        method = environ.get('REQUEST_METHOD', 'GET')
        if path == PATH:
            if method not in ('GET', 'HEAD'):
                return hooks.error_response(
                    405, 'The method is not allowed for %s.' % PATH)(
                        environ, start_response)
            return self._metrics_app(environ, start_response)
        return self._timed(environ, start_response, route_of(path),
                           method if method in METHODS else 'other')

    def _timed(self, environ, start_response, route, method):
        status = []

        def recording_start_response(status_line, headers, exc_info=None):
            status[:] = [status_line.split(' ', 1)[0]]
            return start_response(status_line, headers, exc_info)

        IN_FLIGHT.inc()
        started = time.monotonic()
        try:
            body = self._application(environ, recording_start_response)
        except Exception:
            _observe(started, method, route, '500')
            raise
        if isinstance(body, (list, tuple)):
            _observe(started, method, route, status[0] if status else '500')
            return body
        # A streamed body is timed until the server closes it.
        return _ClosingBody(body, lambda: _observe(
            started, method, route, status[0] if status else '500'))


def _observe(started, method, route, status):
    IN_FLIGHT.dec()
    REQUEST_SECONDS.labels(method, route, status).observe(
        time.monotonic() - started)


class _ClosingBody:
    """A response body that calls ``on_close`` once, when closed."""

    def __init__(self, body, on_close):
        self._body = body
        self._on_close = on_close

    def __iter__(self):
        return iter(self._body)

    def close(self):
        try:
            if hasattr(self._body, 'close'):
                self._body.close()
        finally:
            on_close, self._on_close = self._on_close, None
            if on_close is not None:
                on_close()
