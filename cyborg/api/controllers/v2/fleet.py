"""/v2/fleet: the fleet page for a browser, its data for the page's script.

Which one a GET answers depends on its Accept header
(``cyborg.api.fleet.wants_html``): a browser's navigation gets the page,
which holds no data and needs no rule; anything else gets the JSON, under
the rule ``cyborg:fleet:get``.
"""

import pecan
import webob
from pecan import rest

from cyborg.api import fleet as fleet_page
from cyborg.api.schemas import fleet as fleet_schemas
from cyborg.api.views import fleet as fleet_views
from cyborg.objects import fleet as fleet_objects
from cyborg.policies import arq as arq_policies
from cyborg.policies import fleet as fleet_policies
from cyborg.policies import history as history_policies


class FleetController(rest.RestController):
    """GET /v2/fleet."""

    # Both media types are declared so that Pecan accepts either Accept;
    # which one is served is decided below, as cyborg.api.auth decides it.
    @pecan.expose('json')
    @pecan.expose(content_type=fleet_page.HTML)
    def get_all(self, **params):
        """The page (text/html), or a page of the fleet as JSON."""
        request = pecan.request
        if fleet_page.wants_html(request.headers.get('Accept')):
            response = webob.Response(content_type=fleet_page.HTML,
                                      charset='UTF-8')
            response.text = fleet_page.page()
            response.cache_control = 'no-cache'
            return response
        pecan.override_template('json', fleet_page.JSON)
        context = request.context
        context.can(fleet_policies.GET)
        query = fleet_schemas.parse_query(params)
        # The devices are the fleet's; the ARQs, the caller's project's
        # unless an admin asks; the history entries, those the history's
        # readers may see.
        rows = fleet_objects.read_fleet(
            context, project_id=arq_policies.owner_filter(context),
            history_project_id=history_policies.arq_project_filter(context),
            history_per_device=fleet_views.HISTORY_PER_DEVICE, **query)
        return fleet_views.fleet(rows, query)
