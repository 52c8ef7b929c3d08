"""/v2/attributes: list, show, create and delete deployable attributes.

Creating and deleting go through the conductor, which keeps the
deployable's provider in Placement in step (``rc`` and ``trait*`` keys).
From microversion 2.4 an attribute is shown with the attributes nested
under it (``children``) and a list pages over the top-level attributes;
see ``cyborg.api.views.attributes``.
"""

import pecan
from pecan import rest

from cyborg import objects
from cyborg.api import microversions
from cyborg.api.schemas import attributes as attribute_schemas
from cyborg.api.schemas import body as body_schemas
from cyborg.api.views import attributes as attribute_views
from cyborg.policies import attribute as attribute_policies


class AttributesController(rest.RestController):
    """GET, POST /v2/attributes; GET, DELETE /v2/attributes/{uuid}."""

    @pecan.expose('json')
    def get_all(self, **params):
        """Attributes matching the filters, one page sorted as asked."""
        request = pecan.request
        request.context.can(attribute_policies.LIST)
        query = attribute_schemas.list_query(params, request.max_limit)
        if microversions.supports_nested_attributes(request.version):
            trees = objects.Attribute.list_trees(
                request.context, filters=query.filters, plain=True,
                **query.paging())
            return attribute_views.tree_collection(trees, query, params,
                                                   request.base_url)
        # Plain rows, not objects: the list only renders them.
        attributes = objects.Attribute.list_rows(
            request.context, filters=query.filters, plain=True,
            **query.paging())
        return attribute_views.collection(attributes, query, params,
                                          request.base_url)

    @pecan.expose('json')
    def get_one(self, uuid):
        """One attribute, not wrapped (from 2.4 with its nested ones)."""
        request = pecan.request
        request.context.can(attribute_policies.SHOW)
        if microversions.supports_nested_attributes(request.version):
            tree = objects.Attribute.get_tree(request.context, uuid)
            return attribute_views.one_tree(tree, request.base_url)
        attribute = objects.Attribute.get_by_uuid(request.context, uuid)
        return attribute_views.one(attribute, request.base_url)

    @pecan.expose('json')
    def post(self):
        """Add an attribute to a deployable; 201 with the attribute."""
        request = pecan.request
        request.context.can(attribute_policies.CREATE)
        values = attribute_schemas.create_values(
            body_schemas.json_body(request))
        attribute = request.conductor.create_attribute(request.context,
                                                       values)
        pecan.response.status = 201
        return attribute_views.created(attribute, request.version,
                                       request.base_url)

    @pecan.expose(content_type='application/json')
    def delete(self, uuid):
        """Delete an attribute; 204."""
        request = pecan.request
        request.context.can(attribute_policies.DELETE)
        request.conductor.delete_attribute(request.context, uuid)
        pecan.response.status = 204
        return ''
