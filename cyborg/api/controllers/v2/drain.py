"""POST .../drain and .../undrain of a device or a deployable (2.6).

Shared by the devices' and deployables' controllers: below microversion
2.6 the paths are unknown (404); then the rule is checked, the optional
body read (``cyborg.api.schemas.drain``) and the conductor asked
(``cyborg.conductor.drain``: it sets or clears the mark, records the
history entry and syncs the host's providers in Placement). The caller
then shows the object as GET would at the request's version.
"""

import pecan

from cyborg import exception
from cyborg.api import microversions
from cyborg.api.schemas import drain as drain_schemas
from cyborg.conductor import rpcapi as conductor_rpcapi

DEVICE = 'device'
DEPLOYABLE = 'deployable'


def act(request, kind, uuid, drain, rule):
    """Drain (``drain`` True) or undrain the ``kind`` with ``uuid`` for
    ``request``, once its rule allows it.

    :raises: webob's 404 below 2.6; exception.Conflict (409) while the
        conductors are pinned below drain's RPC version; the conductor's
        ResourceNotFound (404) and Invalid (400)
    """
    if not microversions.supports_fleet_operations(request.version):
        pecan.abort(404)
    request.context.can(rule)
    reason = drain_schemas.reason(request)
    try:
        request.conductor.set_drain(request.context, kind, uuid, drain,
                                    reason)
    except conductor_rpcapi.VersionPinned as error:
        raise exception.Conflict(str(error)) from None
