"""The deployables of a report, written one level of their trees at a time.

``DeployableWrites`` is the part of ``inventory_report``'s reconciliation
that keeps the deployables it identifies (by device and name, or as an
adopted deployable under another name: ``report_adoption``), updates them
in place, records the bitstream each region holds (``report_bitstreams``)
and gives new ones their resource provider uuid.
"""

from oslo_utils import uuidutils

from cyborg.conductor import placement_sync
from cyborg.conductor import report_bitstreams
from cyborg.db.queries import inventory


class DeployableWrites:
    """Deployables of one report: a part of ``_Reconciliation``.

    Reads the reconciliation's ``deployable_by_name``, ``rp_uuids`` and
    what ``DeviceWrites`` filled; fills ``deployable_uuids`` of the new rows
    and ``bitstream_changes``.
    """

    def _apply_deployables(self, device_ids):
        """Insert and update deployables; return {(device id, name): id}."""
        deployable_ids = {}
        self._adopt_renamed(device_ids)
        # (reported deployable, device id, parent id, root id) of one level.
        level = [(deployable, device_ids[device.identity], None, None)
                 for device in self.reported
                 for deployable in device.deployables]
        while level:
            new_rows = []
            updates = []
            for deployable, device_id, parent_id, root_id in level:
                row = self.deployable_by_name.get((device_id, deployable.name))
                # The name changes only for an adopted deployable.
                columns = {'name': deployable.name,
                           'num_accelerators': deployable.num_accelerators,
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
                update = self._update_of(deployable, row, columns)
                if update is not None:
                    updates.append(update)
            inventory.update_rows(self.context, inventory.Deployable, updates,
                                  kept=('bitstream_id',))
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

    def _update_of(self, deployable, row, columns):
        """The update of the existing ``row`` of the reported ``deployable``
        to ``columns`` (and its provider uuid), or None when it is up to
        date; a changed ``bitstream_id`` is noted in ``bitstream_changes``."""
        columns['rp_uuid'] = row['rp_uuid']
        if row['rp_uuid'] is None and deployable.offers_accelerators():
            columns['rp_uuid'] = self._new_rp_uuid(deployable.name)
        if row['bitstream_id'] != columns['bitstream_id']:
            self.bitstream_changes.append(
                (row, row['bitstream_id'], columns['bitstream_id']))
        if all(row[name] == value for name, value in columns.items()):
            return None
        # A row being programmed keeps the image the database holds when it
        # is written, not the one read here: the programming may have
        # recorded its own since.
        return dict(columns, id=row['id'], updated_at=self.now,
                    keep_bitstream_id=report_bitstreams.being_programmed(
                        row, self.now))

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

    def _reported_deployables(self):
        """(device id, reported deployable) of every reported deployable."""
        found = [(device_id, deployable)
                 for device_id, deployables in self.deployables_by_device
                 for deployable in deployables]
        # Breadth first: found grows while it is walked.
        for device_id, deployable in found:
            found.extend((device_id, child) for child in deployable.children)
        return found
