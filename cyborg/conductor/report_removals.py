"""What a report no longer has: deleted, unless a bound ARQ holds it.

``Removals`` is the part of ``inventory_report``'s reconciliation that
deletes the rows a report leaves out. Devices, deployables and attach
handles a bound ARQ holds stay, their device marked MAINTAINING with a
reason saying why, and the mark is cleared once the device is fully
reported again.
"""

import logging

from cyborg.common import vocabulary
from cyborg.db.queries import inventory

LOG = logging.getLogger(__name__)

ENABLED = vocabulary.DeviceStatus.ENABLED
MAINTAINING = vocabulary.DeviceStatus.MAINTAINING

STATUS_REASON_LIMIT = 255
# Every status_reason a report writes ends so; only those a report clears.
KEPT_SUFFIX = '; kept while accelerator requests are bound'


class Removals:
    """Removals of one report: a part of ``_Reconciliation``.

    Reads the stored rows of the reconciliation and the ids the writes
    before found reported; fills ``kept_parts``.
    """

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
        self.kept_devices = kept_devices
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
