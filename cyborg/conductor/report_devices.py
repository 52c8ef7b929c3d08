"""The devices of a report and their control path ids, written in bulk.

``DeviceWrites`` is the part of ``inventory_report``'s reconciliation that
keeps the devices it identifies, updates their columns in place and inserts
new ones with their ``controlpath_ids`` rows, whatever their number in two
statements.
"""

import json

from oslo_utils import uuidutils

from cyborg.common import vocabulary
from cyborg.conductor import report_validation
from cyborg.db.queries import inventory

ENABLED = vocabulary.DeviceStatus.ENABLED


def canonical_text(text):
    """Stored JSON text in canonical form (left as is when it is not JSON)."""
    if text is None:
        return None
    try:
        return report_validation.canonical_json(json.loads(text))
    except ValueError:
        return text


class DeviceWrites:
    """Devices of one report: a part of ``inventory_report._Reconciliation``.

    Reads ``reported``, ``device_by_identity`` and ``cpid_of_device`` of the
    reconciliation; fills ``driver_of_device``, ``reports_bitstreams``,
    ``deployables_by_device`` and ``inserted_devices`` for the writes that
    follow.
    """

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
                stored[name] = canonical_text(stored[name])
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
            self.inserted_devices[device_id] = dict(
                row, id=device_id, health=vocabulary.Health.HEALTHY,
                healthy_reports=0)
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
