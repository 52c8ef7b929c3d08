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
import json
import logging
import uuid

from oslo_utils import uuidutils

from cyborg.conductor import placement_sync
from cyborg.conductor import report_bitstreams
from cyborg.conductor import report_validation
from cyborg.db import api as db_api
from cyborg.db.queries import attach_handles
from cyborg.db.queries import deployable_filters
from cyborg.db.queries import host_locks
from cyborg.db.queries import inventory
from cyborg.objects import fields

LOG = logging.getLogger(__name__)

ENABLED = fields.DeviceStatus.ENABLED
MAINTAINING = fields.DeviceStatus.MAINTAINING

STATUS_REASON_LIMIT = 255
# Every status_reason a report writes ends so; only those a report clears.
KEPT_SUFFIX = '; kept while accelerator requests are bound'
# Attributes a report writes get uuid5(REPORTED_ATTRIBUTES, identity); the
# others (made through the API) are the operator's, and reports leave them.
REPORTED_ATTRIBUTES = uuid.UUID('6f1c3a52-8e0b-4d5e-9a47-2b9d0c7e4f13')


def reported_attribute_uuid(deployable_uuid, parent_attribute_uuid, key):
    """The uuid of the attribute a report writes for this identity."""
    return str(uuid.uuid5(REPORTED_ATTRIBUTES, '%s/%s/%s' % (
        deployable_uuid, parent_attribute_uuid or '', key)))


def _canonical_text(text):
    """Stored JSON text in canonical form (left as is when it is not JSON)."""
    if text is None:
        return None
    try:
        return report_validation.canonical_json(json.loads(text))
    except ValueError:
        return text


def apply(context, host, devices):
    """Make the DB rows of ``host`` match ``devices`` (device_to_primitive dicts).

    :raises: cyborg.exception.Invalid when the report is malformed; then
        nothing is written.
    """
    reported = report_validation.validate(host, devices)
    _reconcile(context, host, reported)


@db_api.writer
def _reconcile(context, host, reported):
    """Reconcile in one transaction of the writer (retried on deadlock)."""
    _Reconciliation(context, host, reported).run()


class _Reconciliation:
    """One report of one host compared with its rows, inside one transaction."""

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

    def run(self):
        """Lock the host, read its rows, then write the differences."""
        # The lock comes first: a second report of this host waits here until
        # the first commits, so that its reads see what the first wrote.
        host_locks.lock_host(self.context, self.host, self.now)
        self._read()
        device_ids = self._apply_devices()
        deployable_ids = self._apply_deployables(device_ids)
        self._apply_attributes(deployable_ids)
        self._apply_attach_handles(device_ids, deployable_ids)
        self._remove_unreported(device_ids, deployable_ids)
        self._refresh_attributes_lists()
        report_bitstreams.log_changes(self.context, self.host,
                                      self.bitstream_changes, self.deployables)

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
            identity = (row['cpid_type'], _canonical_text(row['cpid_info']))
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
             _canonical_text(row['attach_info'])): row
            for row in self.attach_handles.values()}

    # Devices and their control path ids.

    def _apply_devices(self):
        """Insert and update devices; return {reported identity: device id}."""
        device_ids = {}
        new_devices = []
        updates = []
        for device in self.reported:
            columns = {'type': device.type, 'vendor': device.vendor,
                       'model': device.model,
                       'std_board_info': device.std_board_info,
                       'vendor_board_info': device.vendor_board_info}
            row = self.device_by_identity.get(device.identity)
            if row is None:
                new_devices.append((device, dict(
                    columns, uuid=uuidutils.generate_uuid(),
                    hostname=self.host, status=ENABLED,
                    created_at=self.now)))
                continue
            device_ids[device.identity] = row['id']
            stored = dict((name, row[name]) for name in columns)
            for name in ('std_board_info', 'vendor_board_info'):
                stored[name] = _canonical_text(stored[name])
            if stored != columns:
                updates.append(dict(columns, id=row['id'],
                                    updated_at=self.now))
        inventory.update_rows(self.context, inventory.Device, updates)
        device_ids.update(self._insert_devices(new_devices))
        for device in self.reported:
            device_id = device_ids[device.identity]
            self.driver_of_device[device_id] = device.driver_name
            self.reports_bitstreams[device_id] = device.reports_bitstreams
            self.deployables_by_device.append((device_id, device.deployables))
        return device_ids

    def _insert_devices(self, new_devices):
        """Insert new devices with their control path ids.

        ``new_devices`` holds (reported device, device row) pairs; returns
        {reported identity: device id} of the inserted devices. Two
        statements, whatever the number of devices.
        """
        device_ids = {}
        inserted = inventory.insert_rows(
            self.context, inventory.Device, [row for _, row in new_devices])
        new_cpids = []
        for device, row in new_devices:
            device_id = inserted[row['uuid']]
            device_ids[device.identity] = device_id
            new_cpids.append({'uuid': uuidutils.generate_uuid(),
                              'device_id': device_id,
                              'cpid_type': device.cpid_type,
                              'cpid_info': device.cpid_info,
                              'created_at': self.now})
        inserted = inventory.insert_rows(
            self.context, inventory.ControlpathID, new_cpids)
        for row in new_cpids:
            self.cpid_of_device[row['device_id']] = inserted[row['uuid']]
        return device_ids

    # Deployables: a tree per device, written one level at a time.

    def _apply_deployables(self, device_ids):
        """Insert and update deployables; return {(device id, name): id}."""
        deployable_ids = {}
        # (reported deployable, device id, parent id, root id) of one level.
        level = [(deployable, device_ids[device.identity], None, None)
                 for device in self.reported
                 for deployable in device.deployables]
        while level:
            new_rows = []
            updates = []
            for deployable, device_id, parent_id, root_id in level:
                row = self.deployable_by_name.get((device_id, deployable.name))
                columns = {'num_accelerators': deployable.num_accelerators,
                           'driver_name': self.driver_of_device[device_id],
                           'parent_id': parent_id, 'root_id': root_id,
                           'bitstream_id': report_bitstreams.recorded(
                               deployable, row,
                               self.reports_bitstreams[device_id], self.now)}
                if row is None:
                    new_rows.append(dict(
                        columns, uuid=uuidutils.generate_uuid(),
                        name=deployable.name, device_id=device_id,
                        rp_uuid=(self._new_rp_uuid(deployable.name)
                                 if deployable.offers_accelerators() else None),
                        created_at=self.now))
                    continue
                deployable_ids[(device_id, deployable.name)] = row['id']
                columns['rp_uuid'] = row['rp_uuid']
                if row['rp_uuid'] is None and deployable.offers_accelerators():
                    columns['rp_uuid'] = self._new_rp_uuid(deployable.name)
                if any(row[name] != value for name, value in columns.items()):
                    updates.append(dict(columns, id=row['id'],
                                        updated_at=self.now))
                if row['bitstream_id'] != columns['bitstream_id']:
                    self.bitstream_changes.append(
                        (row, row['bitstream_id'], columns['bitstream_id']))
            inventory.update_rows(self.context, inventory.Deployable, updates)
            inserted = inventory.insert_rows(
                self.context, inventory.Deployable, new_rows)
            for row in new_rows:
                deployable_ids[(row['device_id'], row['name'])] = \
                    inserted[row['uuid']]
                self.deployable_uuids[inserted[row['uuid']]] = row['uuid']
            level = [
                (child, device_id, deployable_ids[(device_id, deployable.name)],
                 root_id or deployable_ids[(device_id, deployable.name)])
                for deployable, device_id, _, root_id in level
                for child in deployable.children]
        return deployable_ids

    # Attributes: flat key/value pairs, nested through parent_attribute_id.

    def _new_rp_uuid(self, name):
        """The provider uuid of a new deployable ``name``: the derived one
        (``placement_sync.provider_uuid``), or a random one while a row of
        this host still holds it (a device kept for a bound ARQ beside its
        successor with the same deployable names)."""
        derived = placement_sync.provider_uuid(self.host, name)
        if derived in self.rp_uuids:
            return uuidutils.generate_uuid()
        self.rp_uuids.add(derived)
        return derived

    def _apply_attributes(self, deployable_ids):
        """Insert and update reported attributes, one nesting level at a time.

        Fills ``reported_attribute_ids``: the rows the report has.
        """
        self.reported_attribute_ids = set()
        # (reported attribute, deployable id, parent attribute id and uuid).
        level = [(attribute, deployable_ids[(device_id, deployable.name)],
                  None, None)
                 for device_id, deployable in self._reported_deployables()
                 for attribute in deployable.attributes]
        while level:
            new_rows = []
            updates = []
            # reported attribute uuid -> attribute id, of this level.
            attribute_ids = {}
            for attribute, deployable_id, parent_id, parent_uuid in level:
                attribute_uuid = reported_attribute_uuid(
                    self.deployable_uuids[deployable_id], parent_uuid,
                    attribute.key)
                row = self.attribute_by_uuid.get(attribute_uuid)
                if row is None:
                    new_rows.append({
                        'uuid': attribute_uuid,
                        'deployable_id': deployable_id,
                        'parent_attribute_id': parent_id,
                        'key': attribute.key, 'value': attribute.value,
                        'created_at': self.now})
                    continue
                attribute_ids[attribute_uuid] = row['id']
                if row['value'] != attribute.value:
                    updates.append({'id': row['id'], 'value': attribute.value,
                                    'updated_at': self.now})
            inventory.update_rows(self.context, inventory.Attribute, updates)
            attribute_ids.update(inventory.insert_rows(
                self.context, inventory.Attribute, new_rows))
            self.attributes_changed.update(
                self.attributes[row['id']]['deployable_id']
                for row in updates)
            self.attributes_changed.update(
                row['deployable_id'] for row in new_rows)
            self.reported_attribute_ids.update(attribute_ids.values())
            next_level = []
            for attribute, deployable_id, _, parent_uuid in level:
                attribute_uuid = reported_attribute_uuid(
                    self.deployable_uuids[deployable_id], parent_uuid,
                    attribute.key)
                next_level.extend(
                    (child, deployable_id, attribute_ids[attribute_uuid],
                     attribute_uuid) for child in attribute.children)
            level = next_level

    def _refresh_attributes_lists(self):
        """Store anew the attributes_list of the deployables whose
        attributes changed: one statement, none when none did (an unchanged
        report). Deployables the report deleted are simply not found."""
        deployable_filters.refresh_attributes_list(
            self.context, self.attributes_changed)

    def _is_reported_attribute(self, row):
        """Whether a report wrote this attribute row (not the API)."""
        parent = self.attributes.get(row['parent_attribute_id'])
        return row['uuid'] == reported_attribute_uuid(
            self.deployable_uuids[row['deployable_id']],
            parent['uuid'] if parent is not None else None, row['key'])

    def _reported_deployables(self):
        """(device id, reported deployable) of every reported deployable."""
        found = [(device_id, deployable)
                 for device_id, deployables in self.deployables_by_device
                 for deployable in deployables]
        # Breadth first: found grows while it is walked.
        for device_id, deployable in found:
            found.extend((device_id, child) for child in deployable.children)
        return found

    # Attach handles, identified by type and info within their deployable.

    def _apply_attach_handles(self, device_ids, deployable_ids):
        """Insert new attach handles and bring ``in_use`` in step.

        Fills ``reported_attach_handle_ids``: the rows the report has.
        """
        self.reported_attach_handle_ids = set()
        new_rows = []
        mark_used = set()
        mark_free = set()
        for device_id, deployable in self._reported_deployables():
            deployable_id = deployable_ids[(device_id, deployable.name)]
            for handle in deployable.attach_handles:
                row = self.attach_handle_by_identity.get(
                    (deployable_id, handle.attach_type, handle.attach_info))
                if row is None:
                    new_rows.append({
                        'uuid': uuidutils.generate_uuid(),
                        'deployable_id': deployable_id,
                        'cpid_id': self.cpid_of_device[device_id],
                        'attach_type': handle.attach_type,
                        'attach_info': handle.attach_info,
                        'in_use': handle.in_use, 'created_at': self.now})
                    continue
                self.reported_attach_handle_ids.add(row['id'])
                if row['in_use'] != handle.in_use:
                    (mark_used if handle.in_use else mark_free).add(row['id'])
        inserted = inventory.insert_rows(
            self.context, inventory.AttachHandle, new_rows)
        self.reported_attach_handle_ids.update(inserted.values())
        attach_handles.set_in_use(self.context, mark_used, True, self.now)
        attach_handles.set_in_use(self.context, mark_free, False, self.now)

    # Removals, except of what bound ARQs hold.

    def _remove_unreported(self, device_ids, deployable_ids):
        """Delete the rows the report no longer has, except what ARQs hold.

        Devices, deployables and attach handles a bound ARQ holds stay, and
        their devices are marked (``_mark_kept``).
        """
        reported_devices = set(device_ids.values())
        gone_devices, gone_deployables, gone_handles, gone_attributes = \
            self._unreported(reported_devices, set(deployable_ids.values()))
        held = self._held_deployables(gone_devices, gone_deployables,
                                      gone_handles)
        held_handles = self._held_handles
        kept_devices = {device_id for device_id in gone_devices
                        if any(self.deployables[deployable_id]['device_id']
                               == device_id for deployable_id in held)}
        self._note_kept_parts(gone_deployables & held,
                              gone_handles & held_handles)

        inventory.delete_rows(self.context, inventory.AttachHandle,
                              gone_handles - held_handles)
        inventory.delete_rows(self.context, inventory.Attribute,
                              gone_attributes)
        self.attributes_changed.update(
            self.attributes[attribute_id]['deployable_id']
            for attribute_id in gone_attributes)
        inventory.delete_rows(self.context, inventory.Deployable,
                              gone_deployables - held)
        inventory.delete_rows(self.context, inventory.Device,
                              gone_devices - kept_devices)
        if gone_devices - kept_devices:
            LOG.info('Host %s no longer reports %d device(s); removed',
                     self.host, len(gone_devices - kept_devices))
        self._mark_kept(kept_devices, reported_devices)

    def _unreported(self, reported_devices, reported_deployables):
        """Ids of the stored rows the report no longer has.

        Returns (devices, deployables, attach handles, attributes): the
        devices of the host the report leaves out, and the parts of reported
        devices it leaves out. Attributes made through the API are not
        among them.
        """
        gone_devices = set(self.devices) - reported_devices
        gone_deployables = {
            deployable_id for deployable_id, row in self.deployables.items()
            if row['device_id'] in reported_devices
            and deployable_id not in reported_deployables}
        gone_handles = {
            handle_id for handle_id, row in self.attach_handles.items()
            if self.deployables[row['deployable_id']]['device_id']
            in reported_devices
            and handle_id not in self.reported_attach_handle_ids}
        gone_attributes = {
            attribute_id for attribute_id, row in self.attributes.items()
            if row['deployable_id'] in reported_deployables
            and attribute_id not in self.reported_attribute_ids
            and self._is_reported_attribute(row)}
        return gone_devices, gone_deployables, gone_handles, gone_attributes

    def _note_kept_parts(self, kept_deployables, kept_handles):
        """Record, per device, the first unreported part kept for an ARQ."""
        for deployable_id in sorted(kept_deployables):
            row = self.deployables[deployable_id]
            self.kept_parts.setdefault(
                row['device_id'], 'Deployable %s' % row['name'])
        for handle_id in sorted(kept_handles):
            row = self.attach_handles[handle_id]
            device_id = self.deployables[row['deployable_id']]['device_id']
            self.kept_parts.setdefault(
                device_id, 'Attach handle %s %s of deployable %s' % (
                    row['attach_type'], row['attach_info'],
                    self.deployables[row['deployable_id']]['name']))

    def _held_deployables(self, gone_devices, gone_deployables, gone_handles):
        """Ids of the unreported deployables a bound ARQ holds, with ancestors.

        A deployable is held when an ARQ names it or one of its attach
        handles, or when one of its descendants is held. Also sets
        ``_held_handles``. Queries only when something is to be removed.
        """
        self._held_handles = set()
        candidates = set(gone_deployables) | {
            deployable_id for deployable_id, row in self.deployables.items()
            if row['device_id'] in gone_devices}
        if not candidates and not gone_handles:
            return set()
        held_deployables, held_handles = inventory.held_by_arqs(
            self.context, self.host)
        self._held_handles = held_handles
        held = set()
        holders = set(held_deployables) | {
            self.attach_handles[handle_id]['deployable_id']
            for handle_id in held_handles if handle_id in self.attach_handles}
        for deployable_id in holders:
            # The chain up to the root must stay for the held one to stay.
            while deployable_id is not None and deployable_id not in held:
                if deployable_id in candidates:
                    held.add(deployable_id)
                deployable_id = self.deployables.get(
                    deployable_id, {}).get('parent_id')
        return held

    def _mark_kept(self, kept_devices, reported_devices):
        """Set the status of devices kept for bound ARQs, or clear our mark."""
        since = self.now.strftime('%Y-%m-%dT%H:%M:%SZ')
        updates = []
        for device_id in sorted(kept_devices | set(self.kept_parts)):
            row = self.devices[device_id]
            if device_id in kept_devices:
                what = 'Not reported'
            else:
                what = '%s not reported' % self.kept_parts[device_id]
            reason = '%s by the agent of %s since %s%s' % (
                what, self.host, since, KEPT_SUFFIX)
            LOG.warning('Device %s of host %s: %s', row['uuid'], self.host,
                        reason)
            if row['status'] == ENABLED:
                updates.append({'id': device_id, 'status': MAINTAINING,
                                'status_reason': _shorten(reason),
                                'updated_at': self.now})
        for device_id in sorted(reported_devices - set(self.kept_parts)):
            row = self.devices.get(device_id)
            if (row is not None and row['status'] == MAINTAINING
                    and (row['status_reason'] or '').endswith(KEPT_SUFFIX)):
                LOG.info('Device %s of host %s is fully reported again; '
                         'enabled', row['uuid'], self.host)
                updates.append({'id': device_id, 'status': ENABLED,
                                'status_reason': None,
                                'updated_at': self.now})
        inventory.update_rows(self.context, inventory.Device, updates)


def _shorten(reason):
    """``reason`` cut to fit the column, keeping its recognisable ending."""
    if len(reason) <= STATUS_REASON_LIMIT:
        return reason
    head = STATUS_REASON_LIMIT - len(KEPT_SUFFIX) - 3
    return reason[:head] + '...' + KEPT_SUFFIX
