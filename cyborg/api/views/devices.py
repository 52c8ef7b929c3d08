"""Devices as the API shows them (Cyborg API v2 field names).

``status`` and ``status_reason`` (why a device is in maintenance; an
addition to upstream's fields, kept with seed 004's PATCH) appear from
microversion 2.3; the internal ``id`` never does.
"""

from cyborg.api import links
from cyborg.api import microversions
from cyborg.api.views import listing

RESOURCE = 'devices'


def one(device, version, request=None):
    """The response dict of one device at ``version``."""
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
        'links': links.make_links(RESOURCE, device.uuid, request=request),
    }
    if microversions.supports_device_status(version):
        body['status'] = device.status
        body['status_reason'] = device.status_reason
    return body


def collection(devices, version, query, params, request=None):
    """``{"devices": [...]}`` with a ``next`` link when the page is full."""
    return listing.collection(
        RESOURCE, [one(device, version, request) for device in devices],
        query, params, request)
