"""Deployables adopted from OpenStack Cyborg, recognised under our names.

A deployable imported from OpenStack Cyborg (``cyborg.upstream``) has an
adopted provider (``provider_name`` set) and upstream's name for it,
``<host>_<pci address>`` or the like, which this service's drivers do
not report. Matched by name alone, the first report of the host would
delete it, with its uuid, its provider, its attach handles and the ARQs
bound to them, and create a new one. ``Adoptions`` keeps it instead, by
this rule: within one device (already matched by its control path), an
adopted deployable that no reported deployable names and a reported
deployable that no stored deployable names are the same deployable when
they have the same attach handles (type and canonical info, at least
one) and no other such pair of the device has that set. The stored row
then takes the reported name and keeps everything else (uuid, rp_uuid,
provider name, attach handles, ARQs); ``DeployableWrites`` updates the
name with the rest. Anything left unpaired is treated as any other
deployable: the report adds and removes as it always does.
"""

import collections
import logging

from cyborg.conductor import report_devices

LOG = logging.getLogger(__name__)


class Adoptions:
    """Adopted deployables of one report: a part of ``_Reconciliation``.

    Reads the reconciliation's ``deployables`` and ``attach_handles``;
    points ``deployable_by_name`` at the adopted rows it pairs.
    """

    def _adopt_renamed(self, device_ids):
        """Pair adopted deployables with the reported ones they are."""
        for device in self.reported:
            device_id = device_ids.get(device.identity)
            if device_id is None:
                continue
            reported = _walk(device.deployables)
            names = {deployable.name for deployable in reported}
            orphans = [row for row in self.deployables.values()
                       if row['device_id'] == device_id
                       and row['provider_name'] is not None
                       and row['name'] not in names]
            if not orphans:
                continue
            newcomers = [deployable for deployable in reported
                         if (device_id, deployable.name)
                         not in self.deployable_by_name]
            for row, deployable in _pairs(orphans, newcomers,
                                          self._stored_handles()):
                LOG.info('Host %s: deployable %s (%s), adopted with its '
                         'resource provider %s, is reported as %s: kept and '
                         'renamed', self.host, row['name'], row['uuid'],
                         row['provider_name'], deployable.name)
                self.deployable_by_name[(device_id, deployable.name)] = row

    def _stored_handles(self):
        """{deployable id: frozenset of (type, canonical info)}."""
        handles = collections.defaultdict(set)
        for row in self.attach_handles.values():
            handles[row['deployable_id']].add(
                (row['attach_type'],
                 report_devices.canonical_text(row['attach_info'])))
        return {deployable_id: frozenset(found)
                for deployable_id, found in handles.items()}


def _walk(deployables):
    """Every deployable of the trees, breadth first."""
    found = list(deployables)
    for deployable in found:
        found.extend(deployable.children)
    return found


def _pairs(orphans, newcomers, stored_handles):
    """(stored row, reported deployable) with the same, unique, handles."""
    by_handles = collections.defaultdict(lambda: ([], []))
    for row in orphans:
        handles = stored_handles.get(row['id'])
        if handles:
            by_handles[handles][0].append(row)
    for deployable in newcomers:
        handles = frozenset((handle.attach_type, handle.attach_info)
                            for handle in deployable.attach_handles)
        if handles:
            by_handles[handles][1].append(deployable)
    return [(rows[0], reported[0]) for rows, reported in by_handles.values()
            if len(rows) == 1 and len(reported) == 1]
