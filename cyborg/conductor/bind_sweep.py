"""The binder's sweep: what no bind under way will finish by itself.

At start and every ``bind_sweep_interval`` the sweep fails binds older
than ``[conductor] bind_timeout``, hands the binder the binds whose lease
ran out (their conductor died) and sends Nova the events still owed.
"""

import collections
import datetime
import logging

from oslo_utils import timeutils

from cyborg import exception
from cyborg.conductor import bind_finishing
from cyborg.db import api as db_api
from cyborg.db.queries import arq_binding as queries

LOG = logging.getLogger(__name__)

# At most this many orphaned ARQs are taken over as one batch.
SWEEP_BATCH = 100


class Sweeper:
    """The sweep of ``binder`` (a ``cyborg.conductor.binder.Binder``),
    which it hands the binds it takes over."""

    def __init__(self, binder):
        self._binder = binder

    def run(self, stop):
        """Sweep now and every sweep interval until ``stop`` is set.

        While the database is out (``db_api.OUTAGE``, logged there once)
        the sweep skips; the first after it is the initial one again when
        the initial one never ran."""
        interval = self._binder.settings.sweep_interval
        first = True
        while not stop.is_set():
            if not db_api.OUTAGE.ongoing:
                try:
                    self.sweep(initial=first)
                    first = False
                except exception.DatabaseUnavailable:
                    pass  # Counted and logged by db_api.OUTAGE.
                except Exception:
                    LOG.exception('Sweep of the recorded binds failed; '
                                  'trying again in %s s', interval)
                    first = False
            stop.wait(interval)

    def sweep(self, initial=False):
        """Renew, time out, take over and notify.

        ``initial`` (at start) takes over every ARQ that nobody leased,
        however young. Returns the uuids queued for taking over.
        """
        binder = self._binder
        settings = binder.settings
        now = timeutils.utcnow()
        active = binder.under_way.uuids()
        binder.renew_leases(now)

        expired = queries.binds_started_before(
            binder.context, now - settings.bind_time_limit)
        if expired:
            self.fail_expired(expired)
        expired = {row['uuid'] for row in expired}

        unowned_since = now if initial else now - datetime.timedelta(
            seconds=settings.sweep_interval)
        orphans = self._take_over(now, unowned_since, active | expired)

        owed = queries.instances_owed_events(binder.context, now)
        if owed:
            binder.events.send(bind_finishing.collect_owed_events(
                binder.context, owed, binder.owner, now, settings.lease,
                events_owed=binder.events.owed()))
        return orphans

    def fail_expired(self, rows):
        """Set ARQs (``binds_started_before`` rows) still in BindStarted to
        BindFailed, whoever works on them."""
        binder = self._binder
        reason = ('not bound within bind_timeout (%s s)'
                  % binder.settings.bind_timeout)
        binder.events.send(bind_finishing.fail_expired(
            binder.context, rows, reason, timeutils.utcnow(),
            binder.settings.lease, events_owed=binder.events.owed()))

    def _take_over(self, now, unowned_since, skipped):
        """Queue the orphaned binds (no live lease, unowned since
        ``unowned_since``) but those of ``skipped``; return their uuids."""
        # One batch per instance, as its bind request was: a device that
        # hangs then holds up only the ARQs of its own instance.
        by_instance = collections.defaultdict(list)
        orphans = []
        for arq_uuid, instance_uuid in queries.orphaned_binds(
                self._binder.context, now, unowned_since):
            if arq_uuid not in skipped:
                by_instance[instance_uuid].append(arq_uuid)
                orphans.append(arq_uuid)
        for instance_uuid, arq_uuids in by_instance.items():
            for start in range(0, len(arq_uuids), SWEEP_BATCH):
                batch = arq_uuids[start:start + SWEEP_BATCH]
                LOG.info('Taking over the binds of ARQs %s of instance %s',
                         ', '.join(batch), instance_uuid)
                self._binder.submit(batch)
        return orphans
