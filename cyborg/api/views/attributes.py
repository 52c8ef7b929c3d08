"""Attributes as the API shows them (Cyborg API v2 field names)."""

from cyborg.api import links
from cyborg.api.views import listing

RESOURCE = 'attributes'


def one(attribute, request=None):
    """The response dict of one attribute."""
    return {
        'uuid': attribute.uuid,
        'deployable_id': attribute.deployable_id,
        'key': attribute.key,
        'value': attribute.value,
        'created_at': listing.timestamp(attribute.created_at),
        'updated_at': listing.timestamp(attribute.updated_at),
        'links': links.make_links(RESOURCE, attribute.uuid, request=request),
    }


def collection(attributes, query, params, request=None):
    """``{"attributes": [...]}`` with a ``next`` link when the page is full."""
    return listing.collection(
        RESOURCE, [one(attribute, request) for attribute in attributes],
        query, params, request)
