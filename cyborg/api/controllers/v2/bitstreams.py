"""/v2/bitstreams: POST /v2/bitstreams/{image_id}/prefetch (microversion
2.6).

Prefetching asks the conductor to have the agents of the hosts whose FPGA
regions the Glance image fits put it into their bitstream caches, so that
the first program or bind there downloads nothing. It answers 202 with
the hosts asked (``{"image_id": ..., "hosts": [...]}``) without waiting
for their downloads. Below 2.6 the path is unknown (404). The image is
looked up with the caller's token: one the caller cannot see is a 404.
"""

import pecan
from pecan import rest

from cyborg.api import microversions
from cyborg.api.schemas import bitstreams as bitstream_schemas
from cyborg.policies import bitstream as bitstream_policies


class BitstreamsController(rest.RestController):
    """POST /v2/bitstreams/{image_id}/prefetch."""

    _custom_actions = {'prefetch': ['POST']}

    @pecan.expose('json')
    def prefetch(self, image_id):
        """Send the bitstream to the caches of the hosts it fits; 202."""
        request = pecan.request
        if not microversions.supports_fleet_operations(request.version):
            pecan.abort(404)
        request.context.can(bitstream_policies.PREFETCH)
        image_id = bitstream_schemas.IMAGE_ID.parse('image_id', image_id)
        answer = request.conductor.prefetch_bitstream(request.context,
                                                      image_id)
        pecan.response.status = 202
        return {'image_id': answer['image_id'], 'hosts': answer['hosts']}
