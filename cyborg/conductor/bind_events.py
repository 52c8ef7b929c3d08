"""Telling Nova how binds ended: the events the bind writers collected.

``EventSender.send`` sends them in one request per batch
(``cyborg.clients.nova``) and, once Nova has them, records that they are
no longer owed; events Nova did not get stay owed for the sweep.
"""

import logging
import threading

from cyborg.db.queries import arq_binding as queries

LOG = logging.getLogger(__name__)


class EventSender:
    """Sends ``bind_finishing.Events`` with the NovaClient ``nova_factory``
    makes on first use (the client logs in only in the process that sends
    events), recording with the admin ``context``."""

    def __init__(self, context, nova_factory):
        self._context = context
        self._nova_factory = nova_factory
        self._nova = None
        self._lock = threading.Lock()

    @property
    def nova(self):
        with self._lock:
            if self._nova is None:
                self._nova = self._nova_factory()
            return self._nova

    def owed(self):
        """Whether ending a bind owes Nova an event (no [nova]: nobody to
        tell)."""
        return self.nova.is_configured()

    def send(self, events):
        """Send Nova ``events``; once it has them, they are no longer owed.

        Events Nova could not be given (unreachable, a server error) stay
        pending and the next sweep sends them again, so Nova may hear of
        an ARQ twice but never not at all. Without [nova] they are dropped.
        Only the lease these events were sent under is cleared: an ARQ
        unbound, bound again and ended meanwhile owes Nova its new event.
        """
        if not events:
            return
        tags = [event['tag'] for event in events]
        try:
            delivered = (self.nova.send_events(events)
                         or not self.nova.is_configured())
        except Exception:
            LOG.exception('Sending Nova the events of ARQs %s failed',
                          ', '.join(tags))
            return
        if delivered and events.recorded:
            queries.clear_events_pending(self._context, events.recorded,
                                         events.owner, events.lease_expires_at)
