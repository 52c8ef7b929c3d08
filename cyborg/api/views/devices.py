"""Devices as the API shows them (Cyborg API v2 field names).

``status`` and ``status_reason`` (why a device is in maintenance; an
addition to upstream's fields, kept with the status PATCH) appear from
microversion 2.3; the internal ``id`` never does. A list renders database
rows straight (no object per row), each read by position
(``listing.values_of``) into the fields ``_body`` gives one Device.
"""

from cyborg.api import microversions
from cyborg.api.views import listing

RESOURCE = 'devices'


def _body(device, with_status, make_links):
    body = {
        'uuid': device.uuid,
        'type': device.type,
        'vendor': device.vendor,
        'model': device.model,
        'std_board_info': device.std_board_info,
        'vendor_board_info': device.vendor_board_info,
        'hostname': device.hostname,
        'created_at': listing.timestamp(device.created_at),
        'updated_at': listing.timestamp(device.updated_at),
        'links': make_links(device.uuid),
    }
    if with_status:
        body['status'] = device.status
        body['status_reason'] = device.status_reason
    return body


def one(device, version, base_url):
    """The response dict of one device (object or row) at ``version``."""
    return _body(device, microversions.supports_device_status(version),
                 listing.link_maker(RESOURCE, base_url))


# A list row's columns, in the order of its SELECT
# (``cyborg.db.queries.devices.LIST_COLUMNS``; ``values_of`` then hands
# the rows over as they are).
_ROW_COLUMNS = ('id', 'uuid', 'type', 'vendor', 'model', 'std_board_info',
                'vendor_board_info', 'hostname', 'status', 'status_reason',
                'created_at', 'updated_at', 'health', 'health_reason',
                'health_since', 'drain', 'drain_since')


def _items(rows, version, make_links, fields=None):
    """The response dicts of list ``rows``, as ``_body`` writes a Device's
    and, from 2.6, with its health and drain. Each row is read in one
    pass."""
    values = listing.values_of(rows, _ROW_COLUMNS, fields)
    if microversions.supports_fleet_operations(version):
        return [{
            'uuid': uuid, 'type': type_, 'vendor': vendor, 'model': model,
            'std_board_info': std_board_info,
            'vendor_board_info': vendor_board_info, 'hostname': hostname,
            'created_at': created_at, 'updated_at': updated_at,
            'links': make_links(uuid),
            'status': status, 'status_reason': status_reason,
            'health': health, 'health_reason': health_reason,
            'health_since': health_since, 'drain': drain,
            'drain_since': drain_since,
        } for (_, uuid, type_, vendor, model, std_board_info,
               vendor_board_info, hostname, status, status_reason,
               created_at, updated_at, health, health_reason, health_since,
               drain, drain_since) in values]
    if microversions.supports_device_status(version):
        return [{
            'uuid': uuid, 'type': type_, 'vendor': vendor, 'model': model,
            'std_board_info': std_board_info,
            'vendor_board_info': vendor_board_info, 'hostname': hostname,
            'created_at': created_at, 'updated_at': updated_at,
            'links': make_links(uuid),
            'status': status, 'status_reason': status_reason,
        } for (_, uuid, type_, vendor, model, std_board_info,
               vendor_board_info, hostname, status, status_reason,
               created_at, updated_at, _, _, _, _, _) in values]
    return [{
        'uuid': uuid, 'type': type_, 'vendor': vendor, 'model': model,
        'std_board_info': std_board_info,
        'vendor_board_info': vendor_board_info, 'hostname': hostname,
        'created_at': created_at, 'updated_at': updated_at,
        'links': make_links(uuid),
    } for (_, uuid, type_, vendor, model, std_board_info,
           vendor_board_info, hostname, _, _, created_at,
           updated_at, _, _, _, _, _) in values]


def one_row(row, version, base_url):
    """The response dict of one device at ``version``: ``row`` is
    ``cyborg.objects.Device.get_row``'s, rendered as a list renders it
    (from 2.6 with health and drain)."""
    return _items([row], version, listing.link_maker(RESOURCE, base_url),
                  getattr(row, '_fields', None))[0]


def collection(rows, version, query, params, base_url):
    """``{"devices": [...]}`` with a ``next`` link when the page is full:
    ``rows`` of ``cyborg.objects.Device.list_rows``, rendered as ``_body``
    renders a Device (from 2.6 with health and drain)."""
    items = _items(rows, version, listing.link_maker(RESOURCE, base_url))
    return listing.collection(RESOURCE, items, query, params, base_url)
