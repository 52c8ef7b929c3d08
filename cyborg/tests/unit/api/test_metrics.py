"""GET /metrics of cyborg-api, scraped through the real WSGI application."""

from keystonemiddleware import fixture as auth_fixture
from oslo_utils import uuidutils
import webob

from cyborg.api import app
from cyborg.api.schemas import routes as api_routes
from cyborg.api import metrics as api_metrics
from cyborg import policies
from cyborg.tests import base
from cyborg.tests.unit.api import real_app
from cyborg.tests.unit.metrics import scraping

REQUESTS = 'cyborg_api_request_duration_seconds_count'


def get(application, path, method='GET', headers=None):
    return webob.Request.blank(path, method=method,
                               headers=headers or {}).get_response(application)


def scrape(application):
    response = get(application, '/metrics')
    assert response.status_int == 200, response.status
    return scraping.parse(response.text)


class TestRequestMetrics(real_app.RealAppTestCase):

    def setUp(self):
        super().setUp()
        self.flags(group='metrics', enabled=True)
        self.application = app.setup_app()

    def test_requests_are_counted_by_route_template_and_status(self):
        before = scrape(self.application)
        missing = uuidutils.generate_uuid()

        self.assertEqual(200, get(self.application, '/v2/devices').status_int)
        # Unversioned and trailing-slash paths are the same route.
        self.assertEqual(200, get(self.application, '/devices/').status_int)
        self.assertEqual(404, get(self.application,
                                  '/v2/devices/%s' % missing).status_int)
        self.assertEqual(404, get(self.application,
                                  '/v2/no/such/%s' % missing).status_int)
        after = scrape(self.application)

        def moved(**labels):
            return (after.value(REQUESTS, **labels)
                    - before.value(REQUESTS, **labels))

        self.assertEqual(2, moved(method='GET', route='/v2/devices',
                                  status='200'))
        self.assertEqual(1, moved(method='GET', route='/v2/devices/{uuid}',
                                  status='404'))
        self.assertEqual(1, moved(method='GET', route=api_metrics.UNMATCHED,
                                  status='404'))
        # No raw path ever becomes a label: the series stay bounded.
        routes = {labels['route'] for labels in after.labels_of(REQUESTS)}
        self.assertFalse([route for route in routes if missing in route])
        self.assertLessEqual(routes, {
            route.path for route in api_routes.ROUTES} | {
            api_metrics.UNMATCHED, api_metrics.HEALTHCHECK_PATH})
        # The scrape itself is not timed, and nothing is in flight now.
        self.assertFalse([route for route in routes if 'metrics' in route])
        self.assertEqual(0, after.value('cyborg_api_requests_in_flight'))

    def test_metrics_answers_only_get(self):
        response = get(self.application, '/metrics', method='POST')

        self.assertEqual(405, response.status_int)
        self.assertIn('error_message', response.json_body)

    def test_route_of_reads_paths_as_the_api_serves_them(self):
        uuid = uuidutils.generate_uuid()
        self.assertEqual('/v2/accelerator_requests/{uuid}',
                         api_metrics.route_of('/accelerator_requests/' + uuid))
        self.assertEqual('/v2/deployables/{uuid}/program',
                         api_metrics.route_of('/v2/deployables/%s/program'
                                              % uuid))
        self.assertEqual('/v2/openapi.json',
                         api_metrics.route_of('/v2/openapi.json'))
        self.assertEqual('/v2', api_metrics.route_of('/v2/'))
        self.assertEqual('/', api_metrics.route_of('/'))
        self.assertEqual(api_metrics.UNMATCHED,
                         api_metrics.route_of('/v2/openapiXjson'))


class TestMetricsOff(real_app.RealAppTestCase):

    def test_no_endpoint_when_disabled(self):
        response = get(self.application, '/metrics')

        self.assertEqual(404, response.status_int)
        self.assertNotIn('cyborg_api', response.text)


class TestMetricsWithKeystone(base.TestCase):
    """/metrics needs no token; requests refused by auth are still timed."""

    def setUp(self):
        super().setUp()
        self.flags(auth_strategy='keystone')
        self.flags(group='keystone_authtoken',
                   www_authenticate_uri='http://127.0.0.1:9/identity')
        self.flags(group='metrics', enabled=True)
        policies.reset()
        self.addCleanup(policies.reset)
        self.useFixture(auth_fixture.AuthTokenFixture())
        self.application = app.setup_app()

    def test_scrape_without_token_and_401_counted(self):
        before = scrape(self.application)

        self.assertEqual(401, get(self.application, '/v2/devices').status_int)

        after = scrape(self.application)
        labels = dict(method='GET', route='/v2/devices', status='401')
        self.assertEqual(1, after.value(REQUESTS, **labels)
                         - before.value(REQUESTS, **labels))
