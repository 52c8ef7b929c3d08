"""Apply an agent's full inventory report to the database, in one transaction.

The report is a list of ``drivers.base.device_to_primitive`` dicts. It is
validated first (a malformed report raises ``exception.Invalid`` and writes
nothing), then compared with the host's rows, read in one query per table,
and the differences are written with bulk statements: rows the report
identifies (by the rules of ``cyborg.agent.drivers.base``) are kept and
updated in place, new ones are inserted level by level of their trees, and
rows no longer reported are deleted unless a bound ARQ holds them.
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

import dataclasses
import datetime
import json
import logging
import re
import uuid

from oslo_utils import uuidutils

from cyborg import exception
from cyborg.db import api as db_api
from cyborg.db.queries import attach_handles
from cyborg.db.queries import host_locks
from cyborg.db.queries import inventory
from cyborg.objects import fields

LOG = logging.getLogger(__name__)

ENABLED = fields.DeviceStatus.ENABLED
MAINTAINING = fields.DeviceStatus.MAINTAINING

ATTACH_TYPES = fields.AttachHandleType.ALL
DEPLOYABLE_NAME = re.compile(r'^[A-Za-z0-9_.:-]+$')
# Trees are written one level per statement, so their depth is bounded.
MAX_DEPLOYABLE_DEPTH = 6
MAX_ATTRIBUTE_DEPTH = 4
STRING_LIMITS = {'type': 30, 'vendor': 255, 'model': 255, 'cpid_type': 30,
                 'cpid_info': 255, 'attach_info': 255, 'name': 255,
                 'driver_name': 100, 'key': 255}
STATUS_REASON_LIMIT = 255
# Every status_reason a report writes ends so; only those a report clears.
KEPT_SUFFIX = '; kept while accelerator requests are bound'
# Attributes a report writes get uuid5(REPORTED_ATTRIBUTES, identity); the
# others (made through the API) are the operator's, and reports leave them.
REPORTED_ATTRIBUTES = uuid.UUID('6f1c3a52-8e0b-4d5e-9a47-2b9d0c7e4f13')


def canonical_json(value):
    """``value`` as the JSON text used to identify and compare rows."""
    return json.dumps(value, sort_keys=True, separators=(',', ':'))


def reported_attribute_uuid(deployable_uuid, parent_attribute_uuid, key):
    """The uuid of the attribute a report writes for this identity."""
    return str(uuid.uuid5(REPORTED_ATTRIBUTES, '%s/%s/%s' % (
        deployable_uuid, parent_attribute_uuid or '', key)))


def _canonical_text(text):
    """Stored JSON text in canonical form (left as is when it is not JSON)."""
    if text is None:
        return None
    try:
        return canonical_json(json.loads(text))
    except ValueError:
        return text


# -- The report, validated -------------------------------------------------

@dataclasses.dataclass
class ReportedAttribute:
    key: str
    value: object  # str or None
    children: list


@dataclasses.dataclass
class ReportedAttachHandle:
    attach_type: str
    attach_info: str  # canonical JSON
    in_use: bool


@dataclasses.dataclass
class ReportedDeployable:
    name: str
    num_accelerators: int
    attributes: list
    attach_handles: list
    children: list

    def offers_accelerators(self):
        """True when this deployable becomes a resource provider."""
        return self.num_accelerators > 0 and any(
            attribute.key == 'rc' and attribute.value
            for attribute in self.attributes)


@dataclasses.dataclass
class ReportedDevice:
    type: str
    vendor: str
    model: str
    std_board_info: str
    vendor_board_info: str
    cpid_type: str
    cpid_info: str
    driver_name: str
    deployables: list

    @property
    def identity(self):
        return (self.cpid_type, self.cpid_info)


class _Validator:
    """Turns the report's dicts into Reported* objects or raises Invalid."""

    def __init__(self, host):
        self.host = host
        self.device_identities = set()
        self.deployable_names = set()

    def fail(self, where, problem):
        raise exception.Invalid(
            reason='inventory report of host %s: %s: %s'
            % (self.host, where, problem))

    def field(self, entry, name, where, kind, required=True, default=None):
        if not isinstance(entry, dict):
            self.fail(where, 'expected a dict, got %s' % type(entry).__name__)
        if name not in entry:
            if required:
                self.fail(where, 'missing %r' % name)
            return default
        value = entry[name]
        if kind is int and isinstance(value, bool):
            self.fail(where, '%r must be an integer' % name)
        if not isinstance(value, kind):
            self.fail(where, '%r must be %s, got %s'
                      % (name, _kind_name(kind), type(value).__name__))
        if isinstance(value, str):
            self.check_length(value, name, where)
        return value

    def check_length(self, value, name, where):
        limit = STRING_LIMITS.get(name)
        if limit is not None and len(value) > limit:
            self.fail(where, '%r is longer than %d characters' % (name, limit))
        if name in STRING_LIMITS and name not in ('cpid_info', 'attach_info') \
                and not value:
            self.fail(where, '%r is empty' % name)

    def json_text(self, value, name, where):
        try:
            text = canonical_json(value)
        except (TypeError, ValueError) as error:
            self.fail(where, '%r is not JSON serializable (%s)' % (name, error))
        self.check_length(text, name, where)
        return text

    def devices(self, entries):
        if not isinstance(entries, (list, tuple)):
            self.fail('devices', 'expected a list, got %s'
                      % type(entries).__name__)
        return [self.device(entry, 'device %d' % index)
                for index, entry in enumerate(entries)]

    def device(self, entry, where):
        controlpath_id = self.field(entry, 'controlpath_id', where, dict)
        cpid_type = self.field(controlpath_id, 'cpid_type',
                               where + ' controlpath_id', str)
        cpid_info = self.json_text(
            self.field(controlpath_id, 'cpid_info', where + ' controlpath_id',
                       dict), 'cpid_info', where)
        where = '%s (%s %s)' % (where, cpid_type, cpid_info)
        if (cpid_type, cpid_info) in self.device_identities:
            self.fail(where, 'the same controlpath_id is reported twice')
        self.device_identities.add((cpid_type, cpid_info))
        driver_name = self.field(entry, 'driver_name', where, str)
        deployables = self.field(entry, 'deployables', where, (list, tuple),
                                 required=False, default=[])
        return ReportedDevice(
            type=self.field(entry, 'type', where, str),
            vendor=self.field(entry, 'vendor', where, str),
            model=self.field(entry, 'model', where, str),
            std_board_info=self.json_text(
                self.field(entry, 'std_board_info', where, dict,
                           required=False, default={}),
                'std_board_info', where),
            vendor_board_info=self.json_text(
                self.field(entry, 'vendor_board_info', where, dict,
                           required=False, default={}),
                'vendor_board_info', where),
            cpid_type=cpid_type, cpid_info=cpid_info, driver_name=driver_name,
            deployables=[self.deployable(child, where, 1)
                         for child in deployables])

    def deployable(self, entry, where, depth):
        name = self.field(entry, 'name', where + ' deployable', str)
        where = '%s deployable %r' % (where, name)
        if not DEPLOYABLE_NAME.match(name):
            self.fail(where, 'a name is made of letters, digits, -, _, . '
                             'and :')
        if name in self.deployable_names:
            self.fail(where, 'the name is reported twice on the host')
        self.deployable_names.add(name)
        if depth > MAX_DEPLOYABLE_DEPTH:
            self.fail(where, 'deployables nest deeper than %d levels'
                      % MAX_DEPLOYABLE_DEPTH)
        num_accelerators = self.field(entry, 'num_accelerators', where, int)
        if num_accelerators < 0:
            self.fail(where, "'num_accelerators' is negative")
        attributes = self.field(entry, 'attributes', where, dict,
                                required=False, default={})
        attach_handles = self.field(entry, 'attach_handles', where,
                                    (list, tuple), required=False, default=[])
        children = self.field(entry, 'children', where, (list, tuple),
                              required=False, default=[])
        handles = [self.attach_handle(handle, '%s attach handle %d'
                                      % (where, index))
                   for index, handle in enumerate(attach_handles)]
        identities = [(handle.attach_type, handle.attach_info)
                      for handle in handles]
        if len(set(identities)) != len(identities):
            self.fail(where, 'an attach handle is reported twice')
        return ReportedDeployable(
            name=name, num_accelerators=num_accelerators,
            attributes=self.attributes(attributes, where, 1),
            attach_handles=handles,
            children=[self.deployable(child, where, depth + 1)
                      for child in children])

    def attributes(self, attributes, where, depth):
        if depth > MAX_ATTRIBUTE_DEPTH:
            self.fail(where, 'attributes nest deeper than %d levels'
                      % MAX_ATTRIBUTE_DEPTH)
        reported = []
        for key, value in attributes.items():
            if not isinstance(key, str) or not key:
                self.fail(where, 'attribute key %r is not a non-empty string'
                          % (key,))
            self.check_length(key, 'key', where)
            children = []
            if isinstance(value, dict):
                children = self.attributes(value, '%s attribute %r'
                                           % (where, key), depth + 1)
                value = None
            elif isinstance(value, (bool, int, float)):
                value = json.dumps(value)
            elif value is not None and not isinstance(value, str):
                self.fail(where, 'attribute %r has a %s value; expected a '
                                 'string, number, boolean or dict'
                          % (key, type(value).__name__))
            reported.append(ReportedAttribute(key, value, children))
        return reported

    def attach_handle(self, entry, where):
        attach_type = self.field(entry, 'attach_type', where, str)
        if attach_type not in ATTACH_TYPES:
            self.fail(where, 'attach_type %r is not one of %s'
                      % (attach_type, ', '.join(ATTACH_TYPES)))
        attach_info = self.field(entry, 'attach_info', where, dict)
        for key, value in attach_info.items():
            if not isinstance(key, str) or not isinstance(value, str):
                self.fail(where, 'attach_info must map strings to strings')
        return ReportedAttachHandle(
            attach_type=attach_type,
            attach_info=self.json_text(attach_info, 'attach_info', where),
            in_use=self.field(entry, 'in_use', where, bool, required=False,
                              default=False))


def _kind_name(kind):
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: 'a string', int: 'an integer', bool: 'a boolean',
             dict: 'a dict', list: 'a list', tuple: 'a list'}
    return ' or '.join(dict.fromkeys(names[one] for one in kinds))


def validate(host, devices):
    """The report as ReportedDevice objects.

    :raises: cyborg.exception.Invalid naming the first problem found.
    """
    if not isinstance(host, str) or not host:
        raise exception.Invalid(reason='inventory report without a host name')
    return _Validator(host).devices(devices)


# -- The reconciliation ----------------------------------------------------

def apply(context, host, devices):
    """Make the DB rows of ``host`` match ``devices`` (device_to_primitive dicts).

    :raises: cyborg.exception.Invalid when the report is malformed; then
        nothing is written.
    """
    reported = validate(host, devices)
    _reconcile(context, host, reported)


@db_api.writer
def _reconcile(context, host, reported):
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
        self.deployables_by_device = []

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

    # Reading: one query per table.

    def _read(self):
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
        for device in self.reported:
            device_id = device_ids[device.identity]
            self.driver_of_device[device_id] = device.driver_name
            self.deployables_by_device.append((device_id, device.deployables))
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
                columns = {'num_accelerators': deployable.num_accelerators,
                           'driver_name': self.driver_of_device[device_id],
                           'parent_id': parent_id, 'root_id': root_id}
                row = self.deployable_by_name.get((device_id, deployable.name))
                if row is None:
                    new_rows.append(dict(
                        columns, uuid=uuidutils.generate_uuid(),
                        name=deployable.name, device_id=device_id,
                        rp_uuid=(uuidutils.generate_uuid()
                                 if deployable.offers_accelerators() else None),
                        created_at=self.now))
                    continue
                deployable_ids[(device_id, deployable.name)] = row['id']
                columns['rp_uuid'] = row['rp_uuid']
                if row['rp_uuid'] is None and deployable.offers_accelerators():
                    columns['rp_uuid'] = uuidutils.generate_uuid()
                if any(row[name] != value for name, value in columns.items()):
                    updates.append(dict(columns, id=row['id'],
                                        updated_at=self.now))
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

    def _apply_attributes(self, deployable_ids):
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
        attach_handles.set_in_use(self.context, mark_used, True,
                                            self.now)
        attach_handles.set_in_use(self.context, mark_free, False,
                                            self.now)

    # Removals, except of what bound ARQs hold.

    def _remove_unreported(self, device_ids, deployable_ids):
        reported_devices = set(device_ids.values())
        reported_deployables = set(deployable_ids.values())
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

        held = self._held_deployables(gone_devices, gone_deployables,
                                      gone_handles)
        held_handles = self._held_handles

        kept_devices = {device_id for device_id in gone_devices
                        if any(self.deployables[deployable_id]['device_id']
                               == device_id for deployable_id in held)}
        for deployable_id in sorted(gone_deployables & held):
            row = self.deployables[deployable_id]
            self.kept_parts.setdefault(
                row['device_id'], 'Deployable %s' % row['name'])
        for handle_id in sorted(gone_handles & held_handles):
            row = self.attach_handles[handle_id]
            device_id = self.deployables[row['deployable_id']]['device_id']
            self.kept_parts.setdefault(
                device_id, 'Attach handle %s %s of deployable %s' % (
                    row['attach_type'], row['attach_info'],
                    self.deployables[row['deployable_id']]['name']))

        inventory.delete_rows(self.context, inventory.AttachHandle,
                              gone_handles - held_handles)
        inventory.delete_rows(self.context, inventory.Attribute,
                              gone_attributes)
        inventory.delete_rows(self.context, inventory.Deployable,
                              gone_deployables - held)
        inventory.delete_rows(self.context, inventory.Device,
                              gone_devices - kept_devices)
        if gone_devices - kept_devices:
            LOG.info('Host %s no longer reports %d device(s); removed',
                     self.host, len(gone_devices - kept_devices))
        self._mark_kept(kept_devices, reported_devices)

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
