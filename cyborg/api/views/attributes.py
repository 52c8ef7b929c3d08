"""Attributes as the API shows them (Cyborg API v2 field names)."""

from cyborg.api import links
from cyborg.api.views import listing

RESOURCE = 'attributes'


def one(attribute, base_url):
    """The response dict of one attribute."""
    return {
        'uuid': attribute.uuid,
        'deployable_id': attribute.deployable_id,
        'key': attribute.key,
        'value': attribute.value,
        'created_at': listing.timestamp(attribute.created_at),
        'updated_at': listing.timestamp(attribute.updated_at),
        'links': links.make_links(base_url, RESOURCE, attribute.uuid),
    }


def collection(attributes, query, params, base_url):
    """``{"attributes": [...]}`` with a ``next`` link when the page is full."""
    return listing.collection(
        RESOURCE, [one(attribute, base_url) for attribute in attributes],
        query, params, base_url)
