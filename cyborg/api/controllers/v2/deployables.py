"""/v2/deployables: list and show deployables; program an FPGA region.

A list may be filtered on the deployable's columns, on its device's host,
vendor and type, and on attribute pairs (``attribute=<key>:<value>``); see
``cyborg.api.schemas.deployables``. ``PATCH /v2/deployables/{uuid}/program``
(also ``.../program/{uuid}``, as recent openstacksdk sends it) loads a
Glance bitstream into the deployable: the conductor checks it, has the
host's agent program it and answers once it is recorded.
"""

import pecan
from pecan import rest

from cyborg import objects
from cyborg.api.schemas import body as body_schemas
from cyborg.api.schemas import deployables as deployable_schemas
from cyborg.api.views import deployables as deployable_views
from cyborg.policies import deployable as deployable_policies


def list_deployables(context, query):
    """One page of ``query`` as ``(row, attributes_list)`` pairs (two SQL queries).

    Rows, not objects: the list only renders them (see
    ``cyborg.api.views.deployables``).
    """
    return objects.Deployable.list_rows(
        context, filters=query.filters,
        attributes=query.extra.get('attribute'), **query.paging())


class DeployablesController(rest.RestController):
    """GET /v2/deployables, GET and PATCH .../program of /v2/deployables/{uuid}."""

    @pecan.expose('json')
    def get_all(self, **params):
        """Deployables matching the filters, one page sorted as asked."""
        request = pecan.request
        request.context.can(deployable_policies.LIST)
        query = deployable_schemas.list_query(params, request.max_limit)
        deployables = list_deployables(request.context, query)
        return deployable_views.collection(deployables, query, params,
                                           request.base_url)

    @pecan.expose('json')
    def get_one(self, uuid):
        """One deployable, not wrapped."""
        request = pecan.request
        request.context.can(deployable_policies.SHOW)
        deployable = objects.Deployable.get_by_uuid(request.context, uuid)
        return deployable_views.one(deployable, request.base_url)

    @pecan.expose('json')
    def patch(self, uuid, *remainder):
        """Program a Glance bitstream into the deployable; 200, the deployable.

        PATCH on the deployable itself is not allowed (405).
        """
        request = pecan.request
        if not remainder:
            pecan.abort(405)
        deployable_uuid = deployable_schemas.program_target(uuid, remainder)
        request.context.can(deployable_policies.PROGRAM)
        image_id = deployable_schemas.program_image_id(
            body_schemas.json_body(request))
        # The conductor client waits [conductor] program_timeout (and a
        # little more, so that the conductor's own 504 comes first).
        deployable = request.conductor.program_deployable(
            request.context, deployable_uuid, image_id)
        return deployable_views.one(deployable, request.base_url)
