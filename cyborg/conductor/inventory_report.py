"""Apply an agent's full inventory report to the database, in one transaction.

The report is a list of ``drivers.base.device_to_primitive`` dicts. It is
validated first by ``cyborg.conductor.report_validation`` (a malformed
report raises ``exception.Invalid`` and writes nothing), then compared with
the host's rows, read in one query per table, and the differences are
written with bulk statements: rows the report identifies (by the rules of
``cyborg.agent.drivers.base``) are kept and updated in place, new ones are
inserted level by level of their trees, and rows no longer reported are
deleted unless a bound ARQ holds them. A deployable's ``bitstream_id``
follows what its device reports it holds (``report_bitstreams``).
Attributes added through the API are the operator's: a report neither
matches nor deletes them (the report's own carry a uuid derived from their
identity). Placement is brought in step afterwards by ``placement_sync``.
A report identical to the host's last applied one is not applied at all
(``report_digest``); ``apply`` stores the report's digest with the lock
when the report leaves nothing to weigh again (``_Reconciliation.quiet``).

Reports of one host take turns; reports of different hosts do not wait for
each other. Two reports of a host can overlap (an agent reporting again
after its RPC call timed out while a slow conductor was still applying the
first, two conductors, two agents with the same host name). If both read
"no such device", both insert it, and no unique key could stop that: the
duplicates are whole devices, with their own ids, so their deployables
differ in ``device_id`` too, and a device's identity lives in another
table (``controlpath_ids``). So the transaction begins by locking the
host's row of ``host_locks`` (made by the host's first report) with one
upsert, whatever the number of devices, and a second report of the host
waits there until the first commits. Taken before any read, the lock also
lets the second report see the first one's rows: PostgreSQL's READ
COMMITTED reads what is committed when each statement starts, and
MariaDB's REPEATABLE READ takes its snapshot at the transaction's first
plain read, which comes after the wait (after a read, the lock would
leave the second report on a snapshot without the first one's rows).
SQLite has one writer at a time anyway (``cyborg.db.api``): there the
lock waits for nobody. A report that waits longer than MariaDB's
``innodb_lock_wait_timeout`` is retried by the writer like a deadlock.
"""

import datetime

from cyborg.conductor import health
from cyborg.conductor import report_adoption
from cyborg.conductor import report_attach_handles
from cyborg.conductor import report_attributes
from cyborg.conductor import report_bitstreams
from cyborg.conductor import report_deployables
from cyborg.conductor import report_devices
from cyborg.conductor import report_removals
from cyborg.conductor import report_validation
from cyborg.db import api as db_api
from cyborg.db.queries import attach_handles
from cyborg.db.queries import host_locks
from cyborg.db.queries import inventory

def apply(context, host, devices, recovery_reports=None, digest=None):
    """Make the DB rows of ``host`` match ``devices`` (device_to_primitive dicts).

    The devices' health follows the policy of ``cyborg.conductor.health``
    (``recovery_reports``: ``[health] recovery_reports``). ``digest`` (the
    report's, ``cyborg.conductor.report_digest``) is stored with the
    host's lock when the report leaves nothing to count or keep
    (``_Reconciliation.quiet``); returns the digest stored, or None.

    :raises: cyborg.exception.Invalid when the report is malformed; then
        nothing is written.
    """
    reported = report_validation.validate(host, devices)
    if digest is not None and not all(
            device.health == health.HEALTH.HEALTHY for device in reported):
        # A fault reported is never skipped: each one is weighed.
        digest = None
    return _reconcile(context, host, reported, recovery_reports, digest)


@db_api.writer
def _reconcile(context, host, reported, recovery_reports=None, digest=None):
    """Reconcile in one transaction of the writer (retried on deadlock)."""
    reconciliation = _Reconciliation(context, host, reported)
    reconciliation.recovery_reports = recovery_reports
    reconciliation.digest = digest
    reconciliation.run()
    return reconciliation.digest


class _Reconciliation(report_devices.DeviceWrites,
                      report_adoption.Adoptions,
                      report_deployables.DeployableWrites,
                      report_attributes.AttributeWrites,
                      report_attach_handles.AttachHandleWrites,
                      report_removals.Removals):
    """One report of one host compared with its rows, inside one transaction.

    This class holds the state of the reconciliation and reads the host's
    rows, one query per table; the writes of each table are a part of it,
    kept in a module of their own (``report_devices``,
    ``report_deployables``, ``report_attributes``, ``report_attach_handles``
    and ``report_removals``).
    """

    def __init__(self, context, host, reported):
        self.context = context
        self.host = host
        self.reported = reported
        # Naive UTC, as the models' own created_at/updated_at defaults.
        self.now = datetime.datetime.now(datetime.timezone.utc).replace(
            tzinfo=None)
        # Parts of reported devices kept although unreported: device id ->
        # description of the first such part.
        self.kept_parts = {}
        # Ids of the devices no longer reported but kept for bound ARQs.
        self.kept_devices = set()
        # Filled by _apply_devices: device id -> driver name, and
        # (device id, top-level reported deployables) per reported device.
        self.driver_of_device = {}
        self.reports_bitstreams = {}
        self.deployables_by_device = []
        # (deployable row, recorded image, image now recorded) of the
        # deployables whose bitstream_id the report changes.
        self.bitstream_changes = []
        # Ids of the deployables whose attributes the report inserts,
        # updates or deletes: their stored attributes_list is refreshed
        # once, after the last attribute write (_refresh_attributes_lists).
        self.attributes_changed = set()
        # Device id -> the row inserted for a new device (healthy).
        self.inserted_devices = {}
        # [health] recovery_reports (None: the policy's default).
        self.recovery_reports = None
        # The report's digest, stored with the lock; None once the report
        # turns out not to be quiet.
        self.digest = None

    def run(self):
        """Lock the host, read its rows, then write the differences."""
        # The lock comes first: a second report of this host waits here until
        # the first commits, so that its reads see what the first wrote.
        host_locks.lock_host(self.context, self.host, self.now, self.digest)
        self._read()
        device_ids = self._apply_devices()
        self._apply_health(device_ids)
        deployable_ids = self._apply_deployables(device_ids)
        self._apply_attributes(deployable_ids)
        self._apply_attach_handles(device_ids, deployable_ids)
        self._remove_unreported(device_ids, deployable_ids)
        self._refresh_attributes_lists()
        report_bitstreams.log_changes(self.context, self.host,
                                      self.bitstream_changes, self.deployables)
        if self.digest is not None and not self.quiet():
            self.digest = None
            host_locks.forget(self.context, self.host)

    def quiet(self):
        """Whether the same report again would write nothing: no row of
        the host was degraded before it (a degraded row counts healthy
        reports, each of which must be weighed) and no unreported part is
        kept for a bound ARQ (it goes once the ARQ lets go). The report's
        own devices are all healthy (``apply``)."""
        degraded = health.HEALTH.DEGRADED
        return not (self.kept_parts or self.kept_devices) and not any(
            row['health'] == degraded
            for rows in (self.devices, self.deployables)
            for row in rows.values())

    def _apply_health(self, device_ids):
        """Weigh each device's reported health (``health.apply_report``)."""
        deployables = {}
        for row in self.deployables.values():
            deployables.setdefault(row['device_id'], []).append(row)
        reported = []
        for device in self.reported:
            device_id = device_ids[device.identity]
            row = self.devices.get(device_id) or self.inserted_devices[
                device_id]
            reported.append((row, device, deployables.get(device_id, [])))
        health.apply_report(self.context, self.host, reported,
                            self.recovery_reports)

    # Reading: one query per table.

    def _read(self):
        """Read the host's rows, indexed by id and by what identifies them."""
        context, host = self.context, self.host
        self.devices = {}
        self.device_by_identity = {}
        self.cpid_of_device = {}
        for row in inventory.devices_of_host(context, host):
            self.devices.setdefault(row['id'], row)
            if row['cpid_id'] is None:
                continue
            identity = (row['cpid_type'],
                        report_devices.canonical_text(row['cpid_info']))
            # A second device with the same identity is unreported: removed.
            if identity not in self.device_by_identity and \
                    row['id'] not in self.cpid_of_device:
                self.device_by_identity[identity] = row
                self.cpid_of_device[row['id']] = row['cpid_id']
        self.deployables = {row['id']: row for row in
                            inventory.deployables_of_host(context, host)}
        self.deployable_by_name = {
            (row['device_id'], row['name']): row
            for row in self.deployables.values()}
        self.rp_uuids = {row['rp_uuid'] for row in self.deployables.values()
                         if row['rp_uuid'] is not None}
        self.attributes = {row['id']: row for row in
                           inventory.attributes_of_host(context, host)}
        self.attribute_by_uuid = {row['uuid']: row
                                  for row in self.attributes.values()}
        self.deployable_uuids = {row_id: row['uuid']
                                 for row_id, row in self.deployables.items()}
        self.attach_handles = {row['id']: row for row in
                               attach_handles.of_host(context, host)}
        self.attach_handle_by_identity = {
            (row['deployable_id'], row['attach_type'],
             report_devices.canonical_text(row['attach_info'])): row
            for row in self.attach_handles.values()}
