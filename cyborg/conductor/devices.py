"""Device workflows of the conductor: enabling and disabling a device.

A disabled device has status ``maintaining``: Placement then shows the whole
inventory of each of its deployables' providers as reserved
(``cyborg.conductor.placement_sync``), so nothing new is scheduled on it;
existing allocations and bound requests are left alone.
"""

import logging

from oslo_utils import timeutils

from cyborg.common import vocabulary
from cyborg import exception
from cyborg import objects
from cyborg.conductor import history
from cyborg.conductor import placement_sync
from cyborg.db import api as db_api
from cyborg.db.queries import devices as device_queries
from cyborg.db.queries import history as history_queries

LOG = logging.getLogger(__name__)

STATUS_REASON_LENGTH = 255


def set_status(context, placement, device_uuid, status, reason):
    """Enable or disable (``maintaining``) a device; return the Device.

    Enabling clears the reason; the device's history records the change
    (enable, or disable with its reason) in the same transaction. The
    status is committed first, then the
    host's providers are brought in step; if Placement is unreachable they
    follow at the host's next report.

    :raises: Invalid for an unknown status or a too long reason;
        ResourceNotFound for an unknown device
    """
    if status not in vocabulary.DeviceStatus.ALL:
        raise exception.Invalid(
            reason='status must be one of %s, not %r'
            % (', '.join(vocabulary.DeviceStatus.ALL), status))
    if status == vocabulary.DeviceStatus.ENABLED:
        reason = None
    if reason is not None and (not isinstance(reason, str)
                               or len(reason) > STATUS_REASON_LENGTH):
        raise exception.Invalid(
            reason='status_reason must be a string of at most %d characters'
            % STATUS_REASON_LENGTH)
    row = _update(context, device_uuid, status, reason)
    device = objects.Device.from_db(context, row)
    LOG.info('Device %s of host %s is now %s%s', device.uuid,
             device.hostname, status, ': %s' % reason if reason else '')
    placement_sync.sync_host(context, placement, device.hostname)
    return device


@db_api.writer
def _update(context, device_uuid, status, reason):
    """Set the status and append its history entry; return the row."""
    row = device_queries.update(context, device_uuid,
                                {'status': status, 'status_reason': reason})
    event = (history.EVENTS.ENABLE
             if status == vocabulary.DeviceStatus.ENABLED
             else history.EVENTS.DISABLE)
    history_queries.append(context, [history.of_device(
        context, row, event, timeutils.utcnow(), reason)])
    return row
