"""OpenStack Cyborg's rows turned into this service's, or the reason not.

``plan`` takes the rows ``source.read`` returns and gives a ``Plan``: per
table the rows to carry (``Planned``: this service's column values, its
upstream uuid kept, and its references to other rows by uuid, resolved
to ids only when written), and every row that cannot be carried with the
reason. A row whose parent is not carried is not carried either, so
nothing is written that points at nothing. Upstream's device status
``maintaining`` is this service's disabled; each deployable with a
resource provider keeps its rp_uuid and adopts the provider's name,
which upstream made the deployable's name.
"""

import collections
import datetime
import json

import sqlalchemy as sa

from cyborg.common import columns
from cyborg.common import vocabulary
from cyborg.conductor import report_devices
from cyborg.db import models

# One row to write: ``values`` are its columns (ids aside), ``refs`` its
# foreign keys as {column: (table, uuid)}.
Planned = collections.namedtuple('Planned', ['table', 'uuid', 'values',
                                             'refs'])
# A row that is not carried over, and why.
Skipped = collections.namedtuple('Skipped', ['table', 'uuid', 'reason'])

# The tables in the order they are written (a row after those it names).
TABLES = ('devices', 'controlpath_ids', 'deployables', 'attributes',
          'attach_handles', 'device_profiles',
          'extended_accelerator_requests')


class Plan:
    """What to write, table by table, and what not and why."""

    def __init__(self):
        self.rows = {table: [] for table in TABLES}
        self.skipped = []
        # Upstream id -> uuid of the carried rows, per table.
        self.carried = {table: {} for table in TABLES}

    def carry(self, table, row, values, refs=None):
        """Plan ``row`` (an upstream row) as ``values`` with ``refs``."""
        values = dict(values, uuid=row['uuid'],
                      created_at=row['created_at'] or _utcnow(),
                      updated_at=row['updated_at'])
        self.rows[table].append(Planned(table, row['uuid'], values,
                                        refs or {}))
        self.carried[table][row['id']] = row['uuid']

    def skip(self, table, row, reason):
        """Record that ``row`` is not carried, for ``reason``."""
        self.skipped.append(Skipped(table, row['uuid'], reason))

    def ref(self, table, upstream_id):
        """(table, uuid) of a carried row by its upstream id, else None."""
        row_uuid = self.carried[table].get(upstream_id)
        return None if row_uuid is None else (table, row_uuid)


def plan(rows):
    """The Plan of the upstream ``rows`` ({table: [row dict]})."""
    result = Plan()
    for row in rows['devices']:
        _device(result, row)
    for row in rows['controlpath_ids']:
        _controlpath_id(result, row)
    for row in _tree_order(rows['deployables']):
        _deployable(result, row)
    for row in rows['attributes']:
        _attribute(result, row)
    for row in rows['attach_handles']:
        _attach_handle(result, row)
    groups = {}
    for row in rows['device_profiles']:
        groups[row['id']] = _device_profile(result, row)
    held = set()
    known_profiles = {row['id'] for row in rows['device_profiles']}
    for row in rows['extended_accelerator_requests']:
        _arq(result, row, groups, known_profiles, held)
    return result


def _utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _too_long(table, values):
    """Why ``values`` do not fit the columns of ``table``, or None."""
    model = models.Base.metadata.tables[table]
    for name, value in values.items():
        if not isinstance(value, str):
            continue
        column_type = model.c[name].type
        if isinstance(column_type, sa.Text):
            if len(value.encode('utf-8')) > columns.TEXT_BYTES:
                return 'its %s is over %d bytes' % (name, columns.TEXT_BYTES)
        elif (getattr(column_type, 'length', None)
              and len(value) > column_type.length):
            return 'its %s is longer than %d characters' % (
                name, column_type.length)
    return None


def _carry_checked(result, table, row, values, refs=None):
    """Carry ``row`` unless its values do not fit the columns."""
    problem = _too_long(table, values)
    if problem is not None:
        result.skip(table, row, problem)
    else:
        result.carry(table, row, values, refs)


def _missing(result, table, row, parent_table, parent_id, what):
    """Skip ``row`` when its parent ``parent_id`` is not carried; True then."""
    if result.ref(parent_table, parent_id) is not None:
        return False
    result.skip(table, row, 'its %s (upstream id %s) is not carried over'
                % (what, parent_id))
    return True


def _device(result, row):
    if row['type'] not in vocabulary.DeviceType.ALL:
        result.skip('devices', row, 'its type %r is not one this service '
                    'knows (%s)' % (row['type'],
                                    ', '.join(vocabulary.DeviceType.ALL)))
        return
    if row['status'] not in vocabulary.DeviceStatus.ALL:
        result.skip('devices', row, 'its status %r is not one this service '
                    'knows' % (row['status'],))
        return
    _carry_checked(result, 'devices', row, {
        name: row[name] for name in (
            'type', 'vendor', 'model', 'std_board_info',
            'vendor_board_info', 'hostname', 'status')})


def _controlpath_id(result, row):
    if _missing(result, 'controlpath_ids', row, 'devices', row['device_id'],
                'device'):
        return
    _carry_checked(result, 'controlpath_ids', row, {
        'cpid_type': row['cpid_type'],
        'cpid_info': pci_info(row['cpid_info'])},
        {'device_id': result.ref('devices', row['device_id'])})


def _tree_order(rows):
    """Deployables, each after its parent and root (cycles left last)."""
    by_id = {row['id']: row for row in rows}

    def depth(row):
        seen = set()
        while row['parent_id'] in by_id and row['id'] not in seen:
            seen.add(row['id'])
            row = by_id[row['parent_id']]
        return len(seen)

    return sorted(rows, key=lambda row: (depth(row), row['id']))


def _deployable(result, row):
    table = 'deployables'
    if _missing(result, table, row, 'devices', row['device_id'], 'device'):
        return
    for column, what in (('parent_id', 'parent deployable'),
                         ('root_id', 'root deployable')):
        if row[column] is not None and _missing(result, table, row, table,
                                                row[column], what):
            return
    if not isinstance(row['num_accelerators'], int) or \
            row['num_accelerators'] < 0:
        result.skip(table, row, 'its num_accelerators %r is not a count'
                    % (row['num_accelerators'],))
        return
    values = {name: row[name] for name in (
        'name', 'num_accelerators', 'rp_uuid', 'driver_name',
        'bitstream_id')}
    # Upstream names a deployable's provider after the deployable.
    values['provider_name'] = row['name'] if row['rp_uuid'] else None
    refs = {'device_id': result.ref('devices', row['device_id'])}
    for column in ('parent_id', 'root_id'):
        if row[column] is not None:
            refs[column] = result.ref(table, row[column])
    _carry_checked(result, table, row, values, refs)


def _attribute(result, row):
    if _missing(result, 'attributes', row, 'deployables',
                row['deployable_id'], 'deployable'):
        return
    _carry_checked(result, 'attributes', row,
                   {'key': row['key'], 'value': row['value']},
                   {'deployable_id': result.ref('deployables',
                                                row['deployable_id'])})


def _attach_handle(result, row):
    table = 'attach_handles'
    if _missing(result, table, row, 'deployables', row['deployable_id'],
                'deployable') or _missing(result, table, row,
                                          'controlpath_ids', row['cpid_id'],
                                          'control path id'):
        return
    if row['attach_type'] not in vocabulary.AttachHandleType.ALL:
        result.skip(table, row, 'its attach type %r is not one this service '
                    'knows' % (row['attach_type'],))
        return
    _carry_checked(result, table, row, {
        'attach_type': row['attach_type'],
        'attach_info': pci_info(row['attach_info']),
        'in_use': bool(row['in_use'])}, {
        'deployable_id': result.ref('deployables', row['deployable_id']),
        'cpid_id': result.ref('controlpath_ids', row['cpid_id'])})


def profile_groups(profile_json):
    """The request groups of upstream's ``profile_json``, or raise ValueError.

    Upstream keeps ``{"groups": [{key: value, ...}, ...]}``; this service
    keeps the list alone, each group a string-to-string map.
    """
    try:
        data = json.loads(profile_json)
    except (TypeError, ValueError):
        raise ValueError('its profile_json is not JSON')
    groups = data.get('groups') if isinstance(data, dict) else None
    if not isinstance(groups, list) or not groups or not all(
            isinstance(group, dict) and all(
                isinstance(key, str) and isinstance(value, str)
                for key, value in group.items())
            for group in groups):
        raise ValueError('its groups are not a list of string-to-string '
                         'maps')
    return groups


def _device_profile(result, row):
    """Plan a device profile; return its number of groups (None: skipped)."""
    try:
        groups = profile_groups(row['profile_json'])
    except ValueError as error:
        result.skip('device_profiles', row, str(error))
        return None
    before = len(result.skipped)
    _carry_checked(result, 'device_profiles', row, {
        'name': row['name'], 'description': row['description'],
        'profile_json': json.dumps(groups)})
    return None if len(result.skipped) > before else len(groups)


def _arq(result, row, groups, known_profiles, held):
    table = 'extended_accelerator_requests'
    reason = _arq_problem(result, row, groups, known_profiles, held)
    if reason is not None:
        result.skip(table, row, reason)
        return
    refs = {'device_profile_id': result.ref('device_profiles',
                                            row['device_profile_id'])}
    for column, parent in (('attach_handle_id', 'attach_handles'),
                           ('deployable_id', 'deployables')):
        if row[column] is not None:
            refs[column] = result.ref(parent, row[column])
    before = len(result.skipped)
    _carry_checked(result, table, row, {
        name: row[name] for name in (
            'state', 'device_profile_group_id', 'hostname', 'device_rp_uuid',
            'instance_uuid', 'project_id')}, refs)
    if len(result.skipped) == before and row['attach_handle_id'] is not None:
        held.add(row['attach_handle_id'])


def _arq_problem(result, row, groups, known_profiles, held):
    """Why the ARQ ``row`` cannot be carried, or None."""
    if row['state'] not in vocabulary.ARQState.ALL:
        return 'its state %r is not one this service knows' % (row['state'],)
    profile_id = row['device_profile_id']
    if profile_id not in known_profiles:
        return 'its device profile (upstream id %s) is gone' % profile_id
    if groups.get(profile_id) is None:
        return 'its device profile (upstream id %s) is not carried over' % (
            profile_id,)
    group = row['device_profile_group_id']
    if not isinstance(group, int) or not 0 <= group < groups[profile_id]:
        return ('its device_profile_group_id %r is not a group of its '
                'profile' % (group,))
    for column, parent, what in (
            ('attach_handle_id', 'attach_handles', 'attach handle'),
            ('deployable_id', 'deployables', 'deployable')):
        if row[column] is not None and result.ref(parent, row[column]) is None:
            return 'its %s (upstream id %s) is not carried over' % (
                what, row[column])
    if row['attach_handle_id'] in held:
        return ('its attach handle (upstream id %s) is held by another ARQ '
                'already' % row['attach_handle_id'])
    if row['state'] in vocabulary.ARQState.HOLDING and \
            row['attach_handle_id'] is None:
        return 'it is %s but holds no attach handle' % row['state']
    return None


# The fields of a PCI address in a control path id or an attach handle:
# the hex digits this service's drivers write of each ("0000:0c:00.1") and
# the bound of each.
_PCI_WIDTHS = {'domain': 4, 'bus': 2, 'device': 2, 'function': 1}
_PCI_BOUNDS = {'domain': 0x10000, 'bus': 0x100, 'device': 0x20,
               'function': 8}


def pci_info(text):
    """A PCI address's JSON text with its fields as this service's drivers
    write them, so that the agent's reports match the imported row.

    Upstream's fake driver writes the device of its handles unpadded
    (``"device": "0"``) where a driver of this service reports ``"00"``;
    matched as text, the first report would replace every imported handle
    (and the ARQs bound to it). Any other text is carried as it is.
    """
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return text
    if not isinstance(value, dict) or set(value) != set(_PCI_WIDTHS):
        return text
    try:
        numbers = {key: int(value[key], 16) for key in _PCI_WIDTHS}
    except (TypeError, ValueError):
        return text
    if any(not 0 <= number < _PCI_BOUNDS[key]
           for key, number in numbers.items()):
        return text
    return report_devices.canonical_text(json.dumps({
        key: '%0*x' % (_PCI_WIDTHS[key], number)
        for key, number in numbers.items()}))


def canonical(table, name, value):
    """``value`` of column ``name`` in a form two equal values share."""
    if (table, name) in (('controlpath_ids', 'cpid_info'),
                         ('attach_handles', 'attach_info')):
        return report_devices.canonical_text(value)
    if (table, name) == ('device_profiles', 'profile_json'):
        try:
            return json.loads(value)
        except (TypeError, ValueError):
            return value
    return value
