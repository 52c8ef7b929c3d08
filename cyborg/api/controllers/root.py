"""The root controller: GET / and the /v2 subtree."""

import pecan

from cyborg.api.controllers import v2
from cyborg.api.controllers import versions


class RootController:
    """GET / lists the API versions; everything else is under ``v2``."""

    v2 = v2.V2Controller()

    @pecan.expose(generic=True, template='json')
    def index(self):
        """Any method but GET: 405."""
        pecan.abort(405)

    @index.when(method='HEAD', template='json')
    @index.when(method='GET', template='json')
    def index_get(self):
        """The version document of the service."""
        return versions.root_document(pecan.request.base_url)
