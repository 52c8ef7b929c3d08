"""Deployables as the API shows them (Cyborg API v2 field names).

``attributes_list`` is a JSON string of ``[{key: value}, ...]`` and
``device_id`` the device's internal integer id, as upstream clients expect.
From microversion 2.4 a deployable also carries its own integer ``id``
(what ``parent_id`` and ``root_id`` of others name) and the uuids of its
parent and root (``parent_uuid``, ``root_uuid``), and a nested attribute is
shown under its parent in ``attributes_list`` (the parent's value is then
the object of its nested attributes). Lists and GET of one render database
rows straight (``cyborg.objects.Deployable.list_rows`` and ``get_row``)
through the same ``_body`` as a Deployable object (a program's answer).
"""

import json

from cyborg.api import microversions
from cyborg.api.views import listing

RESOURCE = 'deployables'


def row_options(version):
    """The ``list_rows``/``get_row`` keywords of what ``version`` shows."""
    return {
        'tree_uuids': microversions.supports_deployable_tree_links(version),
        'nested_attributes': microversions.supports_nested_attributes(
            version),
    }


def _body(deployable, attributes_list, make_links, tree_uuids=False):
    body = {}
    if tree_uuids:
        body['id'] = deployable.id
    body['uuid'] = deployable.uuid
    body['parent_id'] = deployable.parent_id
    if tree_uuids:
        body['parent_uuid'] = deployable.parent_uuid
    body['root_id'] = deployable.root_id
    if tree_uuids:
        body['root_uuid'] = deployable.root_uuid
    body.update({
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
    })
    return body


def one(deployable, base_url):
    """The response dict of one Deployable object, below microversion 2.4
    (an object has no tree uuids nor nested attributes)."""
    return _body(deployable, deployable.attributes_list,
                 listing.link_maker(RESOURCE, base_url))


def one_row(result, version, base_url):
    """The response dict of one deployable at ``version``: ``result`` is
    the ``(row, attributes_list)`` pair of ``Deployable.get_row`` called
    with ``row_options(version)``."""
    row, attributes_list = result
    return _body(row, attributes_list, listing.link_maker(RESOURCE, base_url),
                 tree_uuids=row_options(version)['tree_uuids'])


def collection(results, version, query, params, base_url):
    """``{"deployables": [...]}`` with a ``next`` link when the page is full.

    ``results`` are ``(row, attributes_list)`` pairs of
    ``cyborg.objects.Deployable.list_rows`` called with
    ``row_options(version)``.
    """
    make_links = listing.link_maker(RESOURCE, base_url)
    tree_uuids = row_options(version)['tree_uuids']
    return listing.collection(
        RESOURCE, [_body(row, attributes_list, make_links,
                         tree_uuids=tree_uuids)
                   for row, attributes_list in results],
        query, params, base_url)
