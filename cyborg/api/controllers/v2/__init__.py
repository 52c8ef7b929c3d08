"""The v2 route table: GET /v2 and one attribute per resource collection.

Each collection's controller lives in ``controllers/v2/<collection>.py``.
"""

import pecan

from cyborg.api.controllers import versions
from cyborg.api.controllers.v2 import arqs as arq_controllers
from cyborg.api.controllers.v2 import attributes as attribute_controllers
from cyborg.api.controllers.v2 import deployables as deployable_controllers
from cyborg.api.controllers.v2 import device_profiles as device_profile_controllers
from cyborg.api.controllers.v2 import devices as device_controllers


class V2Controller:
    """Routes /v2/<collection> to the controller of that collection."""

    # Resource collections, one attribute each.
    devices = device_controllers.DevicesController()
    deployables = deployable_controllers.DeployablesController()
    attributes = attribute_controllers.AttributesController()
    device_profiles = device_profile_controllers.DeviceProfilesController()
    accelerator_requests = arq_controllers.ARQsController()

    @pecan.expose(generic=True, template='json')
    def index(self):
        """Any method but GET: 405."""
        pecan.abort(405)

    @index.when(method='HEAD', template='json')
    @index.when(method='GET', template='json')
    def index_get(self):
        """The version document of v2."""
        return versions.v2_document(pecan.request.base_url)
