"""Prefetching a bitstream: the conductor's part of
``POST /v2/bitstreams/{image_id}/prefetch``.

``Prefetcher.prefetch`` looks the image up in Glance with the caller's
token, reads its bitstream metadata, finds the hosts with an FPGA region
it fits (``cyborg.bitstream_fit.check_fits``, the rule a program call
and a bind apply: vendor, board, region and shell) and casts
``prefetch_bitstream`` to each host's agent, which puts the image into
its bitstream cache. Nobody waits for the downloads: the call answers the
hosts asked.
"""

import dataclasses
import logging

import oslo_messaging

from cyborg import bitstream as bitstreams
from cyborg import bitstream_fit
from cyborg.common import vocabulary
from cyborg import exception
from cyborg.db.queries import bitstream_targets

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class _Region:
    """A region row with the columns ``DeviceInfo.from_rows`` reads of a
    device and a deployable."""

    name: str
    vendor: str
    model: str
    vendor_board_info: str | None


def fitting_hosts(bitstream, rows):
    """The hosts (sorted) of the region ``rows``
    (``bitstream_targets.fpga_regions``) that ``bitstream`` fits."""
    hosts = set()
    for row in rows:
        if row.hostname in hosts:
            continue
        region = _Region(row.deployable_name, row.vendor, row.model,
                         row.vendor_board_info)
        attributes = {} if row.region_id is None else {
            bitstream_targets.REGION_ID: row.region_id}
        info = bitstream_fit.DeviceInfo.from_rows(
            region, region, attributes,
            vendor_names=vocabulary.VENDOR_NAMES)
        try:
            bitstream_fit.check_fits(bitstream, info)
        except bitstreams.BitstreamMismatch:
            continue
        hosts.add(row.hostname)
    return sorted(hosts)


class Prefetcher:
    """Sends bitstreams to the caches of the hosts they fit.

    ``agents`` is an ``AgentAPI``; ``glance_for(context)`` returns a
    ``GlanceClient`` making its calls with ``context``'s token.
    """

    def __init__(self, agents, glance_for):
        self.agents = agents
        self.glance_for = glance_for

    def prefetch(self, context, image_id):
        """Have the agents of the hosts ``image_id`` fits cache it; return
        ``{'image_id': ..., 'hosts': [...]}`` (no host: nothing fits).

        :raises: ImageNotFound (404: unknown, or not visible to the
            caller), InvalidBitstream (400), Conflict (409: agents pinned
            below prefetching),
            GlanceError, GlanceUnavailable
        """
        if not self.agents.prefetches:
            # A Conflict of cyborg.exception: it crosses RPC as it is.
            raise exception.Conflict(
                'Image %s cannot be prefetched: agents are pinned to RPC '
                'version %s ([upgrade_levels] agent), older than '
                'prefetching.' % (image_id, self.agents.version_cap))
        image = self.glance_for(context).get_image(image_id)
        bitstream = bitstreams.Bitstream.from_image(image)
        hosts = fitting_hosts(bitstream,
                              bitstream_targets.fpga_regions(context))
        sent = []
        for host in hosts:
            try:
                self.agents.prefetch_bitstream(context, host, image_id)
            except oslo_messaging.MessagingException as error:
                # The others still get theirs; this host downloads at its
                # first bind.
                LOG.warning('Prefetch of image %s could not be sent to %s: '
                            '%s', image_id, host, error)
                continue
            sent.append(host)
        LOG.info('Prefetch of image %s sent to %d host(s): %s', image_id,
                 len(sent), ', '.join(sent) or 'none fits')
        return {'image_id': image_id, 'hosts': sent}
