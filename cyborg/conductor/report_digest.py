"""An agent's report as the conductor receives it: unchanged ones skipped.

An agent reports its whole inventory every ``[agent] report_interval``
(60 s), and almost every report is the one before: at 10,000 hosts that
is 167 reports a second whose application writes nothing. So the
conductor keeps, in the host's ``host_locks`` row, a digest of the last
report it applied (``digest``: SHA-256 of the report's canonical JSON)
and when it last brought Placement in step after it. A report with the
same digest, within ``[conductor] report_resync_interval`` of that
sync, costs one statement (``host_locks.in_step``) and no Placement
request: nothing is validated, read or written. Otherwise the report is
applied (``inventory_report.apply``), Placement is synced
(``placement_sync.sync_host``), and only once that sync succeeded is the
digest marked synced (``host_locks.mark_synced``): a sync that failed is
repeated by the next report, as before.

Like Nova's resource tracker, which refreshes its cache of the provider
tree every ``[compute] resource_provider_association_refresh`` seconds,
the skip is bounded in time: past ``report_resync_interval`` a report is
applied and synced in full even when unchanged, which repairs whatever
drifted (a provider changed or deleted in Placement by hand, a row
changed behind the conductor's back). 0 applies every report in full.

A conductor applies the first report of each host it receives in full
(``_Seen``), as Nova's resource tracker syncs its whole tree at start:
its memory of what Placement holds starts empty, and a restarted agent's
first report is what an operator restarting it expects to be read.

Only a quiet report is ever skipped, so that the health policy
(``cyborg.conductor.health``) sees every report it weighs: the digest is
stored only when every reported device is healthy, no device or
deployable of the host is degraded (counting healthy reports) and no
unreported part is kept for a bound ARQ (``inventory_report``). A writer
that changes what the next report would write back clears the digest
(``host_locks.forget``): an attribute written through the API, a region
marked degraded by a failed verification, a programming recorded.
"""

import dataclasses
import datetime
import hashlib
import json
import threading
import weakref

from cyborg.conductor import inventory_report
from cyborg.conductor import placement_sync
from cyborg.db.queries import host_locks

# Part of every digest: a change of what a report writes (a new release)
# makes every stored digest differ, so the first report after an upgrade
# is applied in full.
VERSION = b'cyborg-report-1\n'


@dataclasses.dataclass(frozen=True)
class ReportSettings:
    """What the conductor's configuration says of reports."""

    # [health] recovery_reports (None: the health policy's default).
    recovery_reports: int = None
    # [conductor] report_resync_interval, seconds; 0: never skip.
    resync_interval: int = 0

    @classmethod
    def from_conf(cls, conf):
        return cls(recovery_reports=conf.health.recovery_reports,
                   resync_interval=conf.conductor.report_resync_interval)


def digest(devices):
    """The digest of a report (``device_to_primitive`` dicts): the same
    for the same devices in the same order, whatever the order of keys."""
    text = json.dumps(devices, sort_keys=True, separators=(',', ':'),
                      default=str)
    return hashlib.sha256(VERSION + text.encode('utf-8')).hexdigest()


class _Seen:
    """The hosts whose report a conductor applied and synced in full, per
    Placement client (one per conductor process: a new one, a restarted
    conductor, has seen none)."""

    def __init__(self):
        self._hosts = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def has(self, placement, host):
        with self._lock:
            return host in self._hosts.get(placement, ())

    def add(self, placement, host):
        with self._lock:
            self._hosts.setdefault(placement, set()).add(host)


_seen = _Seen()


def remember_synced(placement, host):
    """Remember that ``host``'s report was applied and Placement synced
    through ``placement`` (a conductor's client), as ``receive`` does
    after a sync that succeeded."""
    _seen.add(placement, host)


def utcnow():
    """Now, naive UTC, as the models' timestamps."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def receive(context, placement, host, devices, settings, on_applied=None):
    """Apply ``host``'s report and sync Placement, unless it is unchanged.

    ``on_applied(host)`` is called once the report is applied or found
    unchanged, before Placement is synced, whether the sync succeeds or
    not. Returns True when the report was applied, False when skipped.

    :raises: cyborg.exception.Invalid when the report is malformed (then
        nothing is written); PlacementError or ResourceProviderConflict
        as ``placement_sync.sync_host``
    """
    on_applied = on_applied or (lambda host: None)
    report_digest = None
    if settings.resync_interval:
        report_digest = digest(devices)
        since = utcnow() - datetime.timedelta(
            seconds=settings.resync_interval)
        if _seen.has(placement, host) and host_locks.in_step(
                context, host, report_digest, since):
            on_applied(host)
            return False
    stored = inventory_report.apply(context, host, devices,
                                    settings.recovery_reports,
                                    digest=report_digest)
    try:
        synced = placement_sync.sync_host(context, placement, host)
    finally:
        on_applied(host)
    if synced:
        remember_synced(placement, host)
    if synced and stored is not None:
        host_locks.mark_synced(context, host, stored, utcnow())
    return True
