"""/v2/deployables: list and show deployables, and program an FPGA region.

The controller checks the policy, reads queries and bodies through
``cyborg.api.schemas.deployables`` and hands a program call, in each of its
three forms (``.../program``, ``.../program/{uuid}``, a ``/bitstream``
patch), to the conductor. From microversion 2.4 it also serves a
deployable's attributes (``.../attributes[/{key}]``); below 2.4 those are
unknown paths (404).
"""

import pecan
from pecan import rest

from cyborg import exception
from cyborg import objects
from cyborg.api import microversions
from cyborg.api.controllers.v2 import drain as drain_controllers
from cyborg.api.controllers.v2 import health as health_controllers
from cyborg.api.controllers.v2 import history as history_controllers
from cyborg.api.schemas import body as body_schemas
from cyborg.api.schemas import deployables as deployable_schemas
from cyborg.api.views import attributes as attribute_views
from cyborg.api.views import deployables as deployable_views
from cyborg.policies import deployable as deployable_policies


ATTRIBUTES = 'attributes'


def list_deployables(context, query, version):
    """One page of ``query`` as ``(row, attributes_list)`` pairs (one SQL statement).

    Plain rows, not objects: the list only renders them (see
    ``cyborg.api.views.deployables``).
    """
    return objects.Deployable.list_rows(
        context, filters=query.filters, plain=True,
        attributes=query.extra.get('attribute'),
        programmed=query.extra.get('programmed'), **query.paging(),
        **deployable_views.row_options(version))


def attribute_trees(context, uuid, key):
    """The attribute trees GET /v2/deployables/{uuid}/attributes[/{key}]
    answers with (``key`` None for all of them).

    :raises: exception.NotFound (404) for an unknown deployable, or a key
        the deployable has no top-level attribute with
    """
    trees = objects.Attribute.trees_of_deployable(context, uuid, key=key)
    if key is not None and not trees:
        raise exception.NotFound(
            'Deployable %s has no attribute with key %s.' % (uuid, key))
    return trees


class DeployablesController(rest.RestController):
    """GET /v2/deployables; GET, PATCH and PATCH .../program of
    /v2/deployables/{uuid}; GET .../attributes[/{key}] of it (2.4); POST
    .../drain and .../undrain (2.6)."""

    _custom_actions = {'drain': ['POST'], 'undrain': ['POST'],
                       'clear_health': ['POST']}

    @pecan.expose('json')
    def get_all(self, **params):
        """Deployables matching the filters, one page sorted as asked."""
        request = pecan.request
        request.context.can(deployable_policies.LIST)
        query = deployable_schemas.list_query(params, request.max_limit,
                                              request.version)
        deployables = list_deployables(request.context, query,
                                       request.version)
        return deployable_views.collection(deployables, request.version,
                                           query, params, request.base_url)

    @pecan.expose('json')
    def get_one(self, uuid, *remainder):
        """One deployable, not wrapped; from 2.4 also its attributes
        (``.../attributes``) or those with one key
        (``.../attributes/{key}``); from 2.5 its history
        (``.../history``)."""
        request = pecan.request
        if history_controllers.is_history(remainder):
            return history_controllers.page(
                request, deployable_views.RESOURCE, uuid,
                deployable_policies.HISTORY)
        if remainder:
            return self._attributes(request, uuid, remainder)
        request.context.can(deployable_policies.SHOW)
        deployable = objects.Deployable.get_row(
            request.context, uuid, **deployable_views.row_options(
                request.version))
        return deployable_views.one_row(deployable, request.version,
                                        request.base_url)

    @pecan.expose('json')
    def drain(self, uuid):
        """Let no new bind land on the deployable or below it (2.6); 200,
        the deployable."""
        return self._drain(uuid, True, deployable_policies.DRAIN)

    @pecan.expose('json')
    def undrain(self, uuid):
        """Let new binds land on the deployable again (2.6); 200, the
        deployable."""
        return self._drain(uuid, False, deployable_policies.UNDRAIN)

    def _drain(self, uuid, drain, rule):
        request = pecan.request
        drain_controllers.act(request, drain_controllers.DEPLOYABLE, uuid,
                              drain, rule)
        deployable = objects.Deployable.get_row(
            request.context, uuid, **deployable_views.row_options(
                request.version))
        return deployable_views.one_row(deployable, request.version,
                                        request.base_url)

    @pecan.expose('json')
    def clear_health(self, uuid):
        """Make the deployable healthy again (2.6); 200, the deployable."""
        request = pecan.request
        health_controllers.clear(request, health_controllers.DEPLOYABLE,
                                 uuid, deployable_policies.CLEAR_HEALTH)
        deployable = objects.Deployable.get_row(
            request.context, uuid, **deployable_views.row_options(
                request.version))
        return deployable_views.one_row(deployable, request.version,
                                        request.base_url)

    def _attributes(self, request, uuid, remainder):
        """``{"attributes": [...]}`` of GET .../attributes[/{key}] (2.4)."""
        remainder = list(remainder)
        if remainder[:1] != [ATTRIBUTES] or len(remainder) > 2 or \
                not microversions.supports_deployable_attribute_paths(
                    request.version):
            pecan.abort(404)
        request.context.can(deployable_policies.LIST_ATTRIBUTES
                            if len(remainder) == 1
                            else deployable_policies.SHOW_ATTRIBUTE)
        # Any text: a key no attribute can have (too long, a NUL) finds
        # none, the 404 of an unknown key.
        key = remainder[1] if len(remainder) == 2 else None
        trees = attribute_trees(request.context, uuid, key)
        return attribute_views.of_deployable(trees, request.base_url)

    @pecan.expose('json')
    def patch(self, uuid, *remainder):
        """Program a Glance bitstream into the deployable; 200, the deployable.

        ``PATCH .../program`` takes upstream's body; ``PATCH`` on the
        deployable itself the same call as a patch of its ``/bitstream``.
        Both check the same policy and answer the same.
        """
        request = pecan.request
        if remainder:
            deployable_uuid = deployable_schemas.program_target(uuid,
                                                                remainder)
            parse_body = deployable_schemas.program_image_id
        else:
            deployable_uuid = deployable_schemas.deployable_uuid(uuid)
            parse_body = deployable_schemas.bitstream_image_id
        request.context.can(deployable_policies.PROGRAM)
        image_id = parse_body(body_schemas.json_body(request))
        options = deployable_views.row_options(request.version)
        # The conductor client waits [conductor] program_timeout (and a
        # little more, so that the conductor's own 504 comes first). The
        # answer carries what the view shows at this microversion.
        answer = request.conductor.program_deployable(
            request.context, deployable_uuid, image_id,
            row_options=deployable_views.conductor_row_options(
                request.version))
        if options.get('fleet') or (any(options.values())
                                    and 'shown' not in answer):
            # A conductor pinned below RPC 1.5 ([upgrade_levels], during an
            # upgrade) answers the object alone, and health and drain
            # (2.6) are no part of its answer: the row is read here.
            return deployable_views.one_row(
                objects.Deployable.get_row(request.context, deployable_uuid,
                                           **options),
                request.version, request.base_url)
        return deployable_views.programmed(answer, request.version,
                                           request.base_url)
