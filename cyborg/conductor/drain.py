"""Draining a device or one region (deployable) in place, and undraining it.

A drain lets no new bind land on its target while the ARQs bound there keep
working: it sets ``drain_since`` (the first drain's time: draining twice
changes nothing), appends a ``drain`` history entry with the caller's user,
project and request (and the reason given, if any) in the same
transaction, then brings the host's providers in step: Placement then
shows the inventory of every provider at or below the target as reserved
(``cyborg.db.queries.placement.offered_sql``), so the scheduler stops
choosing it; allocations already made stay as they are. An undrain clears
the mark (an ``undrain`` entry) and the next sync offers it again.

Nothing else on the host changes: no agent is called, no ARQ touched. The
API shows ``draining`` while an ARQ still holds an attach handle below the
target and ``drained`` once none does (derived when read, never stored, so
the unbind path writes nothing for it). A bind the conductor claims after
the drain fails with the reason ``drained`` even if a caller names the
provider directly (``cyborg.conductor.bind_transactions``); one recorded
before it is allowed to finish (Placement had offered it).

If Placement cannot be reached, the mark is committed anyway and the
providers follow at the host's next report.
"""

import logging

from oslo_utils import timeutils

from cyborg import exception
from cyborg.conductor import history
from cyborg.conductor import placement_sync
from cyborg.db import api as db_api
from cyborg.db.queries import drain_marks
from cyborg.db.queries import history as history_queries

LOG = logging.getLogger(__name__)

KINDS = drain_marks.KINDS
REASON_LENGTH = 255


def set_drain(context, placement, kind, uuid, drain, reason=None):
    """Drain (``drain`` True) or undrain the device or deployable (``kind``)
    with ``uuid``; return whether its mark changed.

    Idempotent: draining a drained target keeps its first ``drain_since``
    and writes no entry; undraining one not drained does nothing. The
    host's providers are synced in both cases (a sync that failed earlier
    is retried).

    :raises: Invalid for an unknown kind or a bad reason;
        ResourceNotFound for an unknown uuid
    """
    if reason is not None and (not isinstance(reason, str) or not reason
                               or len(reason) > REASON_LENGTH):
        raise exception.Invalid(
            reason='reason must be a string of 1 to %d characters'
            % REASON_LENGTH)
    marked = _mark(context, kind, uuid, bool(drain), reason)
    if marked.changed:
        LOG.info('%s %s of host %s %s%s', kind.capitalize(), uuid,
                 marked.hostname,
                 'drained' if drain else 'undrained',
                 ': %s' % reason if reason else '')
    placement_sync.sync_host(context, placement, marked.hostname)
    return marked.changed


@db_api.writer
def _mark(context, kind, uuid, drain, reason):
    """Set or clear the mark and append its entry when it changed."""
    now = timeutils.utcnow()
    marked = drain_marks.mark(context, kind, uuid, drain, now)
    if marked.changed:
        history_queries.append(context, [entry(context, marked, drain, now,
                                               reason)])
    return marked


def entry(context, marked, drain, now, reason=None):
    """The history entry of a drain (or undrain) of ``marked`` (a
    ``drain_marks.Marked``), asked by ``context``'s caller."""
    return dict(
        history.who(context), created_at=now, device_id=marked.device_id,
        device_uuid=marked.device_uuid, deployable_id=marked.deployable_id,
        deployable_uuid=marked.deployable_uuid,
        event=history.EVENTS.DRAIN if drain else history.EVENTS.UNDRAIN,
        outcome=history.OUTCOMES.OK, reason=reason)
