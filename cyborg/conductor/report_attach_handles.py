"""The attach handles of a report, known by type and info in their deployable.

``AttachHandleWrites`` is the part of ``inventory_report``'s reconciliation
that inserts the attach handles a report adds and brings ``in_use`` of the
others in step with what the agent says.
"""

from oslo_utils import uuidutils

from cyborg.db.queries import attach_handles
from cyborg.db.queries import inventory


class AttachHandleWrites:
    """Attach handles of one report: a part of ``_Reconciliation``.

    Reads the reconciliation's ``attach_handle_by_identity`` and
    ``cpid_of_device``; fills ``reported_attach_handle_ids``.
    """

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
