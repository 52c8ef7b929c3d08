"""The fleet as the page draws it: a page of hosts -> devices ->
deployable trees, with attach handle usage, health and drain state, the
newest history entries of each device, the ARQs of those hosts (and the
newest not yet on a host) grouped by state, where the page is, and the
counts over the whole fleet.

``cyborg.api.schemas.fleet`` declares this body; ``fleet(rows)`` builds it
from ``cyborg.objects.fleet.read_fleet``'s rows without another query.
"""

import collections

from cyborg.api.views import listing
from cyborg.common import vocabulary

# What a deployable is, told by its attributes and its place in the tree.
ROOT = 'root'
REGION = 'region'
PF = 'pf'
VF = 'vf'
VGPU_TYPE = 'vgpu_type'
PART = 'part'
KINDS = (ROOT, REGION, PF, VF, VGPU_TYPE, PART)
# How many of the newest history entries of each device the page shows.
HISTORY_PER_DEVICE = 5


def _kind(attributes, is_root):
    """The kind of a deployable with ``attributes``; a part below a PF is
    a VF (``_trees`` tells)."""
    if 'vgpu_type' in attributes:
        return VGPU_TYPE
    if 'region_id' in attributes or (
            attributes.get('rc') == 'FPGA' and not is_root):
        return REGION
    if 'num_vfs' in attributes:
        return PF
    return ROOT if is_root else PART


def _usage(handle_rows):
    """``{type, in_use, total}`` of a deployable's handles, or None."""
    if not handle_rows:
        return None
    return {'type': ', '.join(row.attach_type for row in handle_rows),
            'in_use': sum(int(row.in_use or 0) for row in handle_rows),
            'total': sum(int(row.total) for row in handle_rows)}


def _condition(row):
    """Health and drain of a device's or deployable's row."""
    return {
        'health': row.health,
        'health_reason': row.health_reason,
        'health_since': listing.timestamp(row.health_since),
        'drain': row.drain,
        'drain_since': listing.timestamp(row.drain_since),
    }


def _entry(row):
    """A history entry as the page shows it."""
    return {
        'id': row.id,
        'created_at': listing.timestamp(row.created_at),
        'event': row.event,
        'outcome': row.outcome,
        'reason': row.reason,
        'deployable_uuid': row.deployable_uuid,
        'image_id': row.image_id,
        'arq_uuid': row.arq_uuid,
        'instance_uuid': row.instance_uuid,
        'user_id': row.user_id,
        'project_id': row.project_id,
        'request_id': row.request_id,
        'agent': row.agent,
    }


def _node(row, kind, attributes, handles, holders):
    return {
        **_condition(row),
        'uuid': row.uuid,
        'name': row.name,
        'kind': kind,
        'num_accelerators': row.num_accelerators,
        'resource_class': attributes.get('rc'),
        'rp_uuid': row.rp_uuid,
        'bitstream_id': row.bitstream_id,
        'function_id': attributes.get('function_id'),
        'vgpu_type': attributes.get('vgpu_type'),
        'vgpu_type_name': attributes.get('vgpu_type_name'),
        'pci_address': attributes.get('pci_address'),
        'attach_handles': _usage(handles),
        'arqs': holders,
        'children': [],
    }


def _trees(rows, attributes_of, handles_of, holders_of):
    """Each device's root nodes, by device id, and every node by id; each
    node holds its children."""
    nodes = {}
    for row in rows:
        attributes = attributes_of.get(row.id, {})
        nodes[row.id] = _node(row, _kind(attributes, row.parent_id is None),
                              attributes, handles_of.get(row.id),
                              holders_of.get(row.id, []))
    roots = collections.defaultdict(list)
    for row in rows:
        node = nodes[row.id]
        parent = nodes.get(row.parent_id)
        if parent is None:
            # A root, or a deployable whose parent is missing: shown at the
            # top of its device rather than not at all.
            roots[row.device_id].append(node)
            continue
        parent['children'].append(node)
        if parent['kind'] == PF and node['kind'] == PART:
            node['kind'] = VF
    return roots, nodes


def _arq(row, deployables):
    deployable = deployables.get(row.deployable_id)
    return {
        'uuid': row.uuid,
        'state': row.state,
        'state_reason': row.state_reason,
        'instance_uuid': row.instance_uuid,
        'hostname': row.hostname,
        'project_id': row.project_id,
        'device_profile_name': row.device_profile_name,
        'deployable_uuid': deployable['uuid'] if deployable else None,
        'deployable_name': deployable['name'] if deployable else None,
    }


def _counts(rows, values, field):
    """How many of ``rows`` (aggregates ending with a count) have each of
    ``values`` in their ``field``-th column."""
    counts = dict.fromkeys(values, 0)
    for row in rows:
        if row[field] in counts:
            counts[row[field]] += int(row[-1])
    return counts


def _summary(counts):
    """The counts over the whole fleet (``FleetCounts``)."""
    arqs = dict.fromkeys(vocabulary.ARQState.ALL, 0)
    arqs.update({state: int(count) for state, count in counts.arqs})
    return {
        'hosts': int(counts.hosts),
        'devices': sum(int(row[-1]) for row in counts.devices),
        'maintaining_devices': sum(
            int(row[-1]) for row in counts.devices
            if row[0] == vocabulary.DeviceStatus.MAINTAINING),
        'deployables': sum(int(row[-1]) for row in counts.deployables),
        'attach_handles': {'in_use': int(counts.handles[1] or 0),
                           'total': int(counts.handles[0])},
        'arqs': arqs,
        'health': {'devices': _counts(counts.devices, vocabulary.Health.ALL,
                                      1),
                   'deployables': _counts(counts.deployables,
                                          vocabulary.Health.ALL, 0)},
        'drain': {'devices': _counts(counts.devices,
                                     vocabulary.DrainState.ALL, 2),
                  'deployables': _counts(counts.deployables,
                                         vocabulary.DrainState.ALL, 1)},
    }


def _page(rows, query):
    """Where this page is: its query and the marker of the next one."""
    return {'host': query.get('host'), 'limit': query['limit'],
            'marker': query.get('marker'), 'hosts': len(rows.hosts),
            'next_marker': rows.next_marker}


def fleet(rows, query):
    """The body of GET /v2/fleet from ``FleetRows`` ``rows`` read for
    ``query`` (``cyborg.api.schemas.fleet.parse_query``'s)."""
    attributes_of = collections.defaultdict(dict)
    for row in rows.attributes:
        attributes_of[row.deployable_id].setdefault(row.key, row.value)
    handles_of = collections.defaultdict(list)
    for row in rows.attach_handles:
        handles_of[row.deployable_id].append(row)
    holders_of = collections.defaultdict(list)
    for row in rows.arqs:
        if row.deployable_id is not None and \
                row.state in vocabulary.ARQState.HOLDING:
            holders_of[row.deployable_id].append(row.uuid)
    roots, nodes = _trees(rows.deployables, attributes_of, handles_of,
                          holders_of)

    history_of = collections.defaultdict(list)
    for row in rows.history:
        history_of[row.device_id].append(_entry(row))
    hosts = {}
    for row in rows.devices:
        hosts.setdefault(row.hostname, []).append({
            **_condition(row),
            'uuid': row.uuid,
            'type': row.type,
            'vendor': row.vendor,
            'model': row.model,
            'status': row.status,
            'status_reason': row.status_reason,
            'deployables': roots.get(row.id, []),
            'history': history_of.get(row.id, []),
        })

    arqs_by_state = {state: [] for state in vocabulary.ARQState.ALL}
    for row in rows.arqs:
        arqs_by_state.setdefault(row.state, []).append(_arq(row, nodes))
    return {
        'summary': _summary(rows.counts),
        'page': _page(rows, query),
        'hosts': [{'hostname': hostname, 'devices': devices}
                  for hostname, devices in hosts.items()],
        'arqs_by_state': arqs_by_state,
    }
