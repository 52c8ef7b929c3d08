"""Deployables as the API shows them (Cyborg API v2 field names).

``attributes_list`` is a JSON string of ``[{key: value}, ...]`` and
``device_id`` the device's internal integer id, as upstream clients expect.
"""

import json

from cyborg.api import links
from cyborg.api.views import listing

RESOURCE = 'deployables'


def one(deployable, request=None):
    """The response dict of one deployable."""
    return {
        'uuid': deployable.uuid,
        'parent_id': deployable.parent_id,
        'root_id': deployable.root_id,
        'name': deployable.name,
        'num_accelerators': deployable.num_accelerators,
        'device_id': deployable.device_id,
        'attributes_list': json.dumps(deployable.attributes_list),
        'rp_uuid': deployable.rp_uuid,
        'driver_name': deployable.driver_name,
        'bitstream_id': deployable.bitstream_id,
        'created_at': listing.timestamp(deployable.created_at),
        'updated_at': listing.timestamp(deployable.updated_at),
        'links': links.make_links(RESOURCE, deployable.uuid, request=request),
    }


def collection(deployables, query, params, request=None):
    """``{"deployables": [...]}`` with a ``next`` link when the page is full."""
    return listing.collection(
        RESOURCE, [one(deployable, request) for deployable in deployables],
        query, params, request)
