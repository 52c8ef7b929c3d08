"""/v2/devices: list and show devices, enable and disable them.

Disabling sets the status ``maintaining`` through the conductor, which also
reserves the device's whole inventory in Placement; the upstream clients'
``POST .../disable`` and ``.../enable`` and a JSON-patch ``PATCH`` of
``/status`` do the same thing.
"""

import pecan
from pecan import rest

from cyborg.common import vocabulary
from cyborg import objects
from cyborg.api import microversions
from cyborg.api import responses
from cyborg.api.controllers.v2 import drain as drain_controllers
from cyborg.api.controllers.v2 import health as health_controllers
from cyborg.api.controllers.v2 import history as history_controllers
from cyborg.api.schemas import body as body_schemas
from cyborg.api.schemas import devices as device_schemas
from cyborg.api.views import devices as device_views
from cyborg.policies import device as device_policies


def shown(request, uuid):
    """The device ``uuid`` as the request's version shows it, read now.

    :raises: cyborg.exception.ResourceNotFound
    """
    return device_views.one_row(
        objects.Device.get_row(request.context, uuid), request.version,
        request.base_url)


class DevicesController(rest.RestController):
    """GET /v2/devices[/{uuid}[/history]], PATCH /v2/devices/{uuid}, POST
    enable/disable."""

    _custom_actions = {'enable': ['POST'], 'disable': ['POST'],
                       'drain': ['POST'], 'undrain': ['POST'],
                       'clear_health': ['POST']}

    @pecan.expose('json')
    def get_all(self, **params):
        """Devices matching the filters, one page sorted as asked."""
        request = pecan.request
        request.context.can(device_policies.LIST)
        query = device_schemas.list_query(params, request.max_limit,
                                          request.version)
        # Plain rows, not objects: the list only renders them.
        devices = objects.Device.list_rows(
            request.context, filters=query.filters, plain=True,
            **query.paging())
        return device_views.collection(devices, request.version, query,
                                       params, request.base_url)

    @pecan.expose('json')
    def get_one(self, uuid, *remainder):
        """One device, not wrapped; from 2.5 its history
        (``.../history``)."""
        request = pecan.request
        if remainder:
            if not history_controllers.is_history(remainder):
                pecan.abort(404)
            return history_controllers.page(
                request, device_views.RESOURCE, uuid,
                device_policies.HISTORY)
        request.context.can(device_policies.SHOW)
        return shown(request, uuid)

    @pecan.expose('json')
    def patch(self, uuid):
        """The JSON-patch form: replace /status with enabled or disabled."""
        request = pecan.request
        # Which rule applies depends on the body: a caller allowed neither
        # is refused before the body is read.
        if not request.context.can(device_policies.ENABLE, fatal=False):
            request.context.can(device_policies.DISABLE)
        status, reason = device_schemas.status_patch(
            body_schemas.json_body(request))
        request.context.can(device_policies.ENABLE
                            if status == vocabulary.DeviceStatus.ENABLED
                            else device_policies.DISABLE)
        device = request.conductor.set_device_status(
            request.context, uuid, status, reason)
        if microversions.supports_fleet_operations(request.version):
            return shown(request, uuid)
        return device_views.one(device, request.version, request.base_url)

    @pecan.expose(content_type='application/json')
    def disable(self, uuid):
        """Put the device in maintenance (status ``maintaining``); empty 200."""
        request = pecan.request
        request.context.can(device_policies.DISABLE)
        request.conductor.set_device_status(
            request.context, uuid, vocabulary.DeviceStatus.MAINTAINING)
        return responses.empty(200)

    @pecan.expose(content_type='application/json')
    def enable(self, uuid):
        """Take the device out of maintenance; empty 200."""
        request = pecan.request
        request.context.can(device_policies.ENABLE)
        request.conductor.set_device_status(
            request.context, uuid, vocabulary.DeviceStatus.ENABLED)
        return responses.empty(200)

    @pecan.expose('json')
    def drain(self, uuid):
        """Let no new bind land on the device (2.6); 200, the device."""
        request = pecan.request
        drain_controllers.act(request, drain_controllers.DEVICE, uuid, True,
                              device_policies.DRAIN)
        return shown(request, uuid)

    @pecan.expose('json')
    def undrain(self, uuid):
        """Let new binds land on the device again (2.6); 200, the device."""
        request = pecan.request
        drain_controllers.act(request, drain_controllers.DEVICE, uuid, False,
                              device_policies.UNDRAIN)
        return shown(request, uuid)

    @pecan.expose('json')
    def clear_health(self, uuid):
        """Make the device healthy again (2.6); 200, the device."""
        request = pecan.request
        health_controllers.clear(request, health_controllers.DEVICE, uuid,
                                 device_policies.CLEAR_HEALTH)
        return shown(request, uuid)
