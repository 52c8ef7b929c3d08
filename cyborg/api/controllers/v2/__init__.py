"""The v2 route table: GET /v2, GET /v2/openapi.json and one attribute per
resource collection.

Each collection's controller lives in ``controllers/v2/<collection>.py``;
the declared table of every operation is ``cyborg.api.schemas.routes``.
"""

import pecan
from pecan import routing

from cyborg.api import openapi
from cyborg.api.controllers import versions
from cyborg.api.controllers.v2 import arqs as arq_controllers
from cyborg.api.controllers.v2 import attributes as attribute_controllers
from cyborg.api.controllers.v2 import bitstreams as bitstream_controllers
from cyborg.api.controllers.v2 import deployables as deployable_controllers
from cyborg.api.controllers.v2 import device_profiles as device_profile_controllers
from cyborg.api.controllers.v2 import devices as device_controllers
from cyborg.api.controllers.v2 import fleet as fleet_controllers
from cyborg.api.schemas import paths
from cyborg.api.schemas import routes


def _method_not_allowed(methods):
    """A controller answering 405, whose Allow header lists ``methods``."""

    class MethodNotAllowed:

        @pecan.expose(generic=True, template='json')
        def index(self, *args, **kwargs):
            """A method the route table does not declare for the path."""
            pecan.abort(405)

    def never_routed_here(*args, **kwargs):
        pecan.abort(404)

    # Registered only so that Pecan names them in Allow.
    for method in sorted(methods):
        MethodNotAllowed.index.when(method=method,
                                    template='json')(never_routed_here)
    return MethodNotAllowed().index


_NOT_ALLOWED = {}


class _Collections:
    """Routes /v2/<collection> to the controller of that collection."""

    # Resource collections, one attribute each.
    devices = device_controllers.DevicesController()
    deployables = deployable_controllers.DeployablesController()
    attributes = attribute_controllers.AttributesController()
    device_profiles = device_profile_controllers.DeviceProfilesController()
    accelerator_requests = arq_controllers.ARQsController()
    # Bitstreams: their prefetch into the hosts' caches.
    bitstreams = bitstream_controllers.BitstreamsController()
    # The fleet page and its data.
    fleet = fleet_controllers.FleetController()

    @pecan.expose(generic=True, template='json')
    def index(self):
        """Any method but GET: 405."""
        pecan.abort(405)

    @index.when(method='HEAD', template='json')
    @index.when(method='GET', template='json')
    def index_get(self):
        """The version document of v2."""
        return versions.v2_document(pecan.request.base_url,
                                    pecan.request.version)

    @pecan.expose(generic=True, template='json', route='openapi.json')
    def openapi_document(self):
        """Any method but GET: 405."""
        pecan.abort(405)

    @openapi_document.when(method='HEAD', template='json')
    @openapi_document.when(method='GET', template='json')
    def openapi_document_get(self):
        """The OpenAPI document of v2 (public, like the version documents)."""
        return openapi.document(pecan.request.max_limit)


class V2Controller(_Collections):
    """The /v2 subtree: a method the route table does not declare for a
    path it declares is a 405 naming the allowed ones (not a 404, nor a
    controller called without its arguments); a declared operation's path
    parameters are checked (``schemas.paths``); the rest is routed as usual.
    """

    _collections = _Collections()

    @pecan.expose()
    def _route(self, args, request):
        path = '/v2/' + '/'.join(args)
        allowed = routes.allowed_methods(path)
        if allowed is not None and request.method not in allowed:
            if allowed not in _NOT_ALLOWED:
                _NOT_ALLOWED[allowed] = _method_not_allowed(allowed)
            return _NOT_ALLOWED[allowed], []
        operation = routes.match(request.method, path)
        if operation is not None:
            # A malformed uuid or name never reaches the database: 404.
            paths.check(*operation)
        return routing.lookup_controller(self._collections, args, request)
