"""The history of devices and deployables: what the conductor appends, and
the pruning of old entries.

Each workflow that changes a device or deployable appends its entries in
the transaction of the change (``cyborg.db.queries.history``): a program
(``programming``), a bind's end (``bind_finishing``), an unbind or a delete
(``arqs``), an enable or disable (``devices``). An entry names who asked
(the caller's user, project and request) or, for what an agent answered,
the agent's host. ``Pruner`` deletes entries older than
``[conductor] history_retention_days`` in bounded batches.
"""

import dataclasses
import datetime
import logging
import threading

from oslo_utils import timeutils

from cyborg import exception
from cyborg.common import vocabulary
from cyborg.db import api as db_api
from cyborg.db.queries import history as history_queries

LOG = logging.getLogger(__name__)

EVENTS = vocabulary.HistoryEvent
OUTCOMES = vocabulary.HistoryOutcome


def who(context):
    """The caller's part of an entry: ``user_id``, ``project_id`` and
    ``request_id`` of ``context``."""
    return {'user_id': getattr(context, 'user_id', None),
            'project_id': getattr(context, 'project_id', None),
            'request_id': getattr(context, 'request_id', None)}


def of_device(context, device, event, now, reason=None):
    """The entry of ``event`` (enable, disable) of ``device`` (a row or a
    Device), asked by ``context``'s caller."""
    return dict(who(context), created_at=now, device_id=device.id,
                device_uuid=device.uuid, event=event, outcome=OUTCOMES.OK,
                reason=reason)


def of_program(context, deployable, device, image_id, now, *, image_hash=None,
               failure=None):
    """The entry of a program of ``deployable`` (on ``device``) with
    ``image_id``: ``ok``, or ``failed`` with ``failure`` (why) as its
    reason; the agent is the device's host."""
    return dict(
        who(context), created_at=now, device_id=device.id,
        device_uuid=device.uuid, deployable_id=deployable.id,
        deployable_uuid=deployable.uuid, event=EVENTS.PROGRAM,
        outcome=OUTCOMES.OK if failure is None else OUTCOMES.FAILED,
        reason=None if failure is None else str(failure), image_id=image_id,
        image_hash=image_hash, agent=device.hostname)


@dataclasses.dataclass(frozen=True)
class PruneSettings:
    """What pruning needs of the configuration ([conductor])."""

    retention_days: int
    interval: int
    batch_size: int

    @classmethod
    def from_conf(cls, conf):
        return cls(retention_days=conf.conductor.history_retention_days,
                   interval=conf.conductor.history_prune_interval,
                   batch_size=conf.conductor.history_prune_batch_size)


class Pruner:
    """Deletes the entries older than the retention, a batch at a time,
    in a thread of its own (``start``, ``stop``) or when asked
    (``prune``)."""

    def __init__(self, context, settings):
        self.context = context
        self.settings = settings
        self._stop = threading.Event()
        self._thread = None

    def prune(self, now=None):
        """Delete every entry older than the retention, in batches of at
        most ``batch_size`` (each its own transaction, so no lock is held
        long); return how many. Nothing with a retention of 0."""
        if not self.settings.retention_days:
            return 0
        now = now or timeutils.utcnow()
        before = now - datetime.timedelta(days=self.settings.retention_days)
        deleted = 0
        while not self._stop.is_set():
            count = history_queries.prune_batch(self.context, before,
                                                self.settings.batch_size)
            deleted += count
            if count < self.settings.batch_size:
                break
        if deleted:
            LOG.info('Pruned %d history entries older than %s', deleted,
                     before)
        return deleted

    def _run(self):
        while not self._stop.is_set():
            try:
                if not db_api.OUTAGE.ongoing:
                    self.prune()
            except exception.DatabaseUnavailable:
                pass  # Counted and logged by db_api.OUTAGE.
            except Exception:
                LOG.exception('Pruning the history failed; trying again in '
                              '%s s', self.settings.interval)
            self._stop.wait(self.settings.interval)

    def start(self):
        """Prune now and every ``interval`` seconds in a thread, unless
        the history is kept forever."""
        if not self.settings.retention_days or self._thread is not None:
            return
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='history-pruner')
        self._thread.start()

    def stop(self, timeout=10):
        """Stop the thread (a batch under way finishes)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
