"""Deployables as the API shows them (Cyborg API v2 field names).

``attributes_list`` is a JSON string of ``[{key: value}, ...]`` and
``device_id`` the device's internal integer id, as upstream clients expect.
From microversion 2.4 a deployable also carries its own integer ``id``
(what ``parent_id`` and ``root_id`` of others name) and the uuids of its
parent and root (``parent_uuid``, ``root_uuid``), and a nested attribute is
shown under its parent in ``attributes_list`` (the parent's value is then
the object of its nested attributes). Lists and GET of one render database
rows straight (``cyborg.objects.Deployable.list_rows`` and ``get_row``):
GET of one through the same ``_body`` as a Deployable object (a program's
answer), a list reading each row by position (``listing.values_of``) into
the same fields in the same order.
"""

import json

from cyborg.api import microversions
from cyborg.api.views import listing

RESOURCE = 'deployables'


def row_options(version):
    """The ``list_rows``/``get_row`` keywords of what ``version`` shows."""
    options = {
        'tree_uuids': microversions.supports_deployable_tree_links(version),
        'nested_attributes': microversions.supports_nested_attributes(
            version),
    }
    if microversions.supports_fleet_operations(version):
        options['fleet'] = True
    return options


def conductor_row_options(version):
    """``row_options`` as a program call hands them to the conductor: the
    health and drain (2.6) are read back by the API (``one_row``), so that
    a conductor that knows no ``fleet`` keyword still answers."""
    options = row_options(version)
    options.pop('fleet', None)
    return options


def attributes_text(attributes_list):
    """The ``attributes_list`` field's JSON text: a list row's already is
    (the database aggregated it), an object's ``[{key: value}, ...]`` is
    written with the same separators and quoting."""
    if type(attributes_list) is str:
        return attributes_list
    return json.dumps(attributes_list, ensure_ascii=False)


def _body(deployable, attributes_list, make_links, tree_uuids=False):
    timestamp = listing.timestamp
    if tree_uuids:
        body = {
            'id': deployable.id,
            'uuid': deployable.uuid,
            'parent_id': deployable.parent_id,
            'parent_uuid': deployable.parent_uuid,
            'root_id': deployable.root_id,
            'root_uuid': deployable.root_uuid,
        }
    else:
        body = {
            'uuid': deployable.uuid,
            'parent_id': deployable.parent_id,
            'root_id': deployable.root_id,
        }
    body['name'] = deployable.name
    body['num_accelerators'] = deployable.num_accelerators
    body['device_id'] = deployable.device_id
    body['attributes_list'] = attributes_text(attributes_list)
    body['rp_uuid'] = deployable.rp_uuid
    body['driver_name'] = deployable.driver_name
    body['bitstream_id'] = deployable.bitstream_id
    body['created_at'] = timestamp(deployable.created_at)
    body['updated_at'] = timestamp(deployable.updated_at)
    body['links'] = make_links(deployable.uuid)
    return body


def one(deployable, base_url):
    """The response dict of one Deployable object, below microversion 2.4
    (an object has no tree uuids nor nested attributes)."""
    return _body(deployable, deployable.attributes_list,
                 listing.link_maker(RESOURCE, base_url))


class _WithTreeUuids:
    """A Deployable object with its parent's and root's uuids."""

    def __init__(self, deployable, parent_uuid, root_uuid):
        self._deployable = deployable
        self.parent_uuid = parent_uuid
        self.root_uuid = root_uuid

    def __getattr__(self, name):
        return getattr(self._deployable, name)


def programmed(answer, version, base_url):
    """The response dict of a program call at ``version``: ``answer`` is
    the conductor's (``cyborg.conductor.programming.answer`` called with
    ``row_options(version)``), rendered as ``one_row`` renders the row."""
    deployable = answer['deployable']
    shown = answer.get('shown')
    if shown is None:
        return one(deployable, base_url)
    tree_uuids = row_options(version)['tree_uuids']
    if tree_uuids:
        deployable = _WithTreeUuids(deployable, shown['parent_uuid'],
                                    shown['root_uuid'])
    return _body(deployable, shown['attributes_list'],
                 listing.link_maker(RESOURCE, base_url),
                 tree_uuids=tree_uuids)


def one_row(result, version, base_url):
    """The response dict of one deployable at ``version``: ``result`` is
    the ``(row, attributes_list)`` pair of ``Deployable.get_row`` called
    with ``row_options(version)``."""
    row, attributes_list = result
    body = _body(row, attributes_list,
                 listing.link_maker(RESOURCE, base_url),
                 tree_uuids=row_options(version)['tree_uuids'])
    if row_options(version).get('fleet'):
        # Before the timestamps and links, where a list puts them.
        for name in _FLEET_COLUMNS:
            body[name] = getattr(row, name)
        for name in ('created_at', 'updated_at', 'links'):
            body[name] = body.pop(name)
    return body


def collection(results, version, query, params, base_url):
    """``{"deployables": [...]}`` with a ``next`` link when the page is full.

    ``results`` are ``(row, attributes_list)`` pairs of
    ``cyborg.objects.Deployable.list_rows`` called with
    ``row_options(version)``.
    """
    make_links = listing.link_maker(RESOURCE, base_url)
    rows = [row for row, _ in results]
    texts = [attributes_list for _, attributes_list in results]
    # The rows' columns: a plain page names them (lean.Page).
    fields = getattr(results, 'fields', None)
    options = row_options(version)
    if options.get('fleet'):
        render = _fleet_items
    elif options['tree_uuids']:
        render = _tree_items
    else:
        render = _items
    items = render(rows, texts, fields, make_links)
    return listing.collection(RESOURCE, items, query, params, base_url)


# Each row read in one pass, its dict written as _body writes it: below
# 2.4, from 2.4 (tree uuids) and from 2.6 (health and drain).
def _items(rows, texts, fields, make_links):
    return [{
        'uuid': uuid, 'parent_id': parent_id, 'root_id': root_id,
        'name': name, 'num_accelerators': num_accelerators,
        'device_id': device_id, 'attributes_list': attributes_list,
        'rp_uuid': rp_uuid, 'driver_name': driver_name,
        'bitstream_id': bitstream_id,
        'created_at': created_at,
        'updated_at': updated_at, 'links': make_links(uuid),
    } for (_, uuid, parent_id, root_id, name, num_accelerators,
           device_id, driver_name, rp_uuid, bitstream_id, created_at,
           updated_at, _), attributes_list in zip(
        listing.values_of(rows, _LIST_COLUMNS, fields), texts,
        strict=True)]


def _tree_items(rows, texts, fields, make_links):
    return [{
        'id': id_, 'uuid': uuid, 'parent_id': parent_id,
        'parent_uuid': parent_uuid, 'root_id': root_id,
        'root_uuid': root_uuid, 'name': name,
        'num_accelerators': num_accelerators, 'device_id': device_id,
        'attributes_list': attributes_list, 'rp_uuid': rp_uuid,
        'driver_name': driver_name, 'bitstream_id': bitstream_id,
        'created_at': created_at,
        'updated_at': updated_at, 'links': make_links(uuid),
    } for (id_, uuid, parent_id, root_id, name, num_accelerators,
           device_id, driver_name, rp_uuid, bitstream_id, created_at,
           updated_at, parent_uuid, root_uuid, _, _), attributes_list
        in zip(listing.values_of(rows, _TREE_LIST_COLUMNS, fields),
               texts, strict=True)]


def _fleet_items(rows, texts, fields, make_links):
    return [{
        'id': id_, 'uuid': uuid, 'parent_id': parent_id,
        'parent_uuid': parent_uuid, 'root_id': root_id,
        'root_uuid': root_uuid, 'name': name,
        'num_accelerators': num_accelerators, 'device_id': device_id,
        'attributes_list': attributes_list, 'rp_uuid': rp_uuid,
        'driver_name': driver_name, 'bitstream_id': bitstream_id,
        'health': health, 'health_reason': health_reason,
        'health_since': health_since, 'drain': drain,
        'drain_since': drain_since, 'created_at': created_at,
        'updated_at': updated_at, 'links': make_links(uuid),
    } for (id_, uuid, parent_id, root_id, name, num_accelerators,
           device_id, driver_name, rp_uuid, bitstream_id, created_at,
           updated_at, parent_uuid, root_uuid, _, _, health,
           health_reason, health_since, drain, drain_since),
        attributes_list
        in zip(listing.values_of(rows, _FLEET_LIST_COLUMNS, fields),
               texts, strict=True)]


# A list row's columns, in the order of its SELECT (``values_of`` then
# hands the rows over as they are): its attributes_list comes apart.
_ROW_COLUMNS = ('id', 'uuid', 'parent_id', 'root_id', 'name',
                'num_accelerators', 'device_id', 'driver_name', 'rp_uuid',
                'bitstream_id', 'created_at', 'updated_at')
_LIST_COLUMNS = _ROW_COLUMNS + ('attributes_text',)
_TREE_LIST_COLUMNS = _ROW_COLUMNS + ('parent_uuid', 'root_uuid',
                                     'attributes_text', 'has_nested')
_FLEET_COLUMNS = ('health', 'health_reason', 'health_since', 'drain',
                  'drain_since')
_FLEET_LIST_COLUMNS = _TREE_LIST_COLUMNS + _FLEET_COLUMNS
