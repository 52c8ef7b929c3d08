"""The attributes of a report: key/value pairs nested by parent attribute.

``AttributeWrites`` is the part of ``inventory_report``'s reconciliation
that writes the attributes a report carries, one nesting level at a time.
A report's attribute is known by a uuid derived from its identity
(``reported_attribute_uuid``); attributes added through the API are the
operator's, and a report neither matches nor deletes them.
"""

import uuid

from cyborg.db.queries import deployable_filters
from cyborg.db.queries import inventory

# Attributes a report writes get uuid5(REPORTED_ATTRIBUTES, identity); the
# others (made through the API) are the operator's, and reports leave them.
REPORTED_ATTRIBUTES = uuid.UUID('6f1c3a52-8e0b-4d5e-9a47-2b9d0c7e4f13')


def reported_attribute_uuid(deployable_uuid, parent_attribute_uuid, key):
    """The uuid of the attribute a report writes for this identity."""
    return str(uuid.uuid5(REPORTED_ATTRIBUTES, '%s/%s/%s' % (
        deployable_uuid, parent_attribute_uuid or '', key)))


class AttributeWrites:
    """Attributes of one report: a part of ``_Reconciliation``.

    Reads the reconciliation's ``attributes``, ``attribute_by_uuid`` and
    ``deployable_uuids``; fills ``reported_attribute_ids`` and
    ``attributes_changed``.
    """

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
            attribute_ids = self._write_attribute_level(level)
            next_level = []
            for attribute, deployable_id, _, parent_uuid in level:
                attribute_uuid = reported_attribute_uuid(
                    self.deployable_uuids[deployable_id], parent_uuid,
                    attribute.key)
                next_level.extend(
                    (child, deployable_id, attribute_ids[attribute_uuid],
                     attribute_uuid) for child in attribute.children)
            level = next_level

    def _write_attribute_level(self, level):
        """Insert and update the attributes of one nesting level.

        Returns {reported attribute uuid: attribute id} of the level: two
        statements at most, whatever its size.
        """
        new_rows = []
        updates = []
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
            self.attributes[row['id']]['deployable_id'] for row in updates)
        self.attributes_changed.update(
            row['deployable_id'] for row in new_rows)
        self.reported_attribute_ids.update(attribute_ids.values())
        return attribute_ids

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
