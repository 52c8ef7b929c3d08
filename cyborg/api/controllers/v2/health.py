"""POST .../clear_health of a device or a deployable (2.6).

Shared by the devices' and deployables' controllers: below microversion
2.6 the path is unknown (404); then the rule is checked, a body refused
unless empty (``cyborg.api.schemas.health``) and the conductor asked
(``cyborg.conductor.health.clear``: healthy again, a ``clear_health``
history entry with the caller, the host's providers synced in Placement).
The caller then shows the object as GET would at the request's version.
"""

import pecan

from cyborg import exception
from cyborg.api import microversions
from cyborg.api.schemas import health as health_schemas
from cyborg.conductor import rpcapi as conductor_rpcapi

DEVICE = 'device'
DEPLOYABLE = 'deployable'


def clear(request, kind, uuid, rule):
    """Clear the health of the ``kind`` with ``uuid`` for ``request``,
    once its rule allows it.

    :raises: webob's 404 below 2.6; exception.Conflict (409) while the
        conductors are pinned below clear_health's RPC version; the
        conductor's ResourceNotFound (404)
    """
    if not microversions.supports_fleet_operations(request.version):
        pecan.abort(404)
    request.context.can(rule)
    health_schemas.check_body(request)
    try:
        request.conductor.clear_health(request.context, kind, uuid)
    except conductor_rpcapi.VersionPinned as error:
        raise exception.Conflict(str(error)) from None
