"""Placement clients for tests: one that records its requests, one that races.

Both talk to the real Placement of the fixture; they only watch or add a
concurrent writer, they never answer in Placement's place.
"""

from cyborg.clients import placement

WRITE_METHODS = ('POST', 'PUT', 'PATCH', 'DELETE')


class RecordingClient(placement.PlacementClient):
    """A PlacementClient that keeps ``(method, url)`` of each request it sends."""

    def __init__(self, conf, **kwargs):
        super().__init__(conf, **kwargs)
        self.requests = []

    def _request(self, method, url, **kwargs):
        self.requests.append((method, url))
        return super()._request(method, url, **kwargs)

    @property
    def writes(self):
        """The recorded requests that change something in Placement."""
        return [request for request in self.requests
                if request[0] in WRITE_METHODS]


class GenerationBumpingClient(RecordingClient):
    """Bumps a provider's generation right after this client reads it.

    ``bumps`` is how many reads (of inventories or traits, of the provider
    ``rp_uuid`` or of any) are followed by another writer changing the
    provider, through ``raw_adapter`` (not this client), before this
    client's PUT.
    """

    def __init__(self, raw_adapter, conf, bumps=1, rp_uuid=None, **kwargs):
        super().__init__(conf, **kwargs)
        self._raw_adapter = raw_adapter
        self.bumps = bumps
        self.rp_uuid = rp_uuid

    def get_inventories(self, rp_uuid):
        current = super().get_inventories(rp_uuid)
        self._bump(rp_uuid)
        return current

    def get_traits(self, rp_uuid):
        current = super().get_traits(rp_uuid)
        self._bump(rp_uuid)
        return current

    def _bump(self, rp_uuid):
        if self.bumps <= 0 or self.rp_uuid not in (None, rp_uuid):
            return
        self.bumps -= 1
        url = '/resource_providers/%s/aggregates' % rp_uuid
        generation = self._raw_adapter.get(url).json()[
            'resource_provider_generation']
        response = self._raw_adapter.put(
            url, json={'aggregates': [],
                       'resource_provider_generation': generation})
        assert response.status_code == 200, response.text
