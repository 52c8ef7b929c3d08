"""Deployables as the API shows them (Cyborg API v2 field names).

``attributes_list`` is a JSON string of ``[{key: value}, ...]`` and
``device_id`` the device's internal integer id, as upstream clients expect.
A list renders database rows straight (no object per row) through the same
``_body`` as a single Deployable object.
"""

import json

from cyborg.api.views import listing

RESOURCE = 'deployables'


def _body(deployable, attributes_list, make_links):
    return {
        'uuid': deployable.uuid,
        'parent_id': deployable.parent_id,
        'root_id': deployable.root_id,
        'name': deployable.name,
        'num_accelerators': deployable.num_accelerators,
        'device_id': deployable.device_id,
        'attributes_list': json.dumps(attributes_list),
        'rp_uuid': deployable.rp_uuid,
        'driver_name': deployable.driver_name,
        'bitstream_id': deployable.bitstream_id,
        'created_at': listing.timestamp(deployable.created_at),
        'updated_at': listing.timestamp(deployable.updated_at),
        'links': make_links(deployable.uuid),
    }


def one(deployable, base_url):
    """The response dict of one Deployable object."""
    return _body(deployable, deployable.attributes_list,
                 listing.link_maker(RESOURCE, base_url))


def collection(results, query, params, base_url):
    """``{"deployables": [...]}`` with a ``next`` link when the page is full.

    ``results`` are ``(row, attributes_list)`` pairs of
    ``cyborg.objects.Deployable.list_rows``.
    """
    make_links = listing.link_maker(RESOURCE, base_url)
    return listing.collection(
        RESOURCE, [_body(row, attributes_list, make_links)
                   for row, attributes_list in results],
        query, params, base_url)
