"""Check an agent's inventory report and turn it into Reported* objects.

An agent sends its whole inventory as a list of
``drivers.base.device_to_primitive`` dicts. Before anything is written,
``validate`` checks every field the database will hold (types, lengths,
nesting depths, names, duplicates) and returns the report as
``ReportedDevice`` trees whose JSON fields are in canonical form, so that
``cyborg.conductor.inventory_report`` can compare them with stored rows
as plain strings. A malformed report raises ``exception.Invalid`` naming
the host and the first problem found; then nothing is written.

A deployable's ``bitstream_id`` attribute is the Glance image it holds
(``ReportedDeployable.bitstream_id``): a text that fits the column it is
recorded in. A device's ``reports_bitstreams`` (a boolean, False when
absent: agents older than it) says that its deployables without one hold
none.

A device's ``health`` (a word of ``vocabulary.Health``; ``healthy`` when
absent: agents older than it) and ``health_reason`` (a text or None, cut
to HEALTH_REASON_LIMIT characters) are what its driver saw at this
discovery; ``cyborg.conductor.health`` decides what they change.
"""

import dataclasses
import json
import re

from cyborg.common import vocabulary
from cyborg import exception

ATTACH_TYPES = vocabulary.AttachHandleType.ALL
DEPLOYABLE_NAME = re.compile(r'^[A-Za-z0-9_.:-]+$')
# Trees are written one level per statement, so their depth is bounded.
MAX_DEPLOYABLE_DEPTH = 6
MAX_ATTRIBUTE_DEPTH = 4
# Lengths of the columns the fields are written to.
STRING_LIMITS = {'type': 30, 'vendor': 255, 'model': 255, 'cpid_type': 30,
                 'cpid_info': 255, 'attach_info': 255, 'name': 255,
                 'driver_name': 100, 'key': 255}
# The attribute naming the image a deployable holds, and the length of the
# column it is recorded in (deployables.bitstream_id).
BITSTREAM_KEY = 'bitstream_id'
BITSTREAM_LIMIT = 36
# The length of health_reason (devices and deployables).
HEALTH_REASON_LIMIT = 255


def canonical_json(value):
    """``value`` as the JSON text used to identify and compare rows."""
    return json.dumps(value, sort_keys=True, separators=(',', ':'))


@dataclasses.dataclass
class ReportedAttribute:
    """A key with a text value (or None) or, when nested, children."""

    key: str
    value: object  # str or None
    children: list


@dataclasses.dataclass
class ReportedAttachHandle:
    """What a VM is given: identified by type and info in its deployable."""

    attach_type: str
    attach_info: str  # canonical JSON
    in_use: bool


@dataclasses.dataclass
class ReportedDeployable:
    """A deployable and its subtree; its name is unique on the host."""

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

    @property
    def bitstream_id(self):
        """The image the deployable says it holds, or None."""
        for attribute in self.attributes:
            if attribute.key == BITSTREAM_KEY:
                return attribute.value
        return None


@dataclasses.dataclass
class ReportedDevice:
    """A device, identified by its control path id (type and info)."""

    type: str
    vendor: str
    model: str
    std_board_info: str
    vendor_board_info: str
    cpid_type: str
    cpid_info: str
    driver_name: str
    deployables: list
    # Whether a deployable reporting no bitstream_id holds none.
    reports_bitstreams: bool = False
    # What the driver saw at this discovery (vocabulary.Health) and why.
    health: str = vocabulary.Health.HEALTHY
    health_reason: object = None  # str or None

    @property
    def identity(self):
        """(cpid_type, canonical cpid_info): what a stored row matches."""
        return (self.cpid_type, self.cpid_info)


class _Validator:
    """Turns the report's dicts into Reported* objects or raises Invalid."""

    def __init__(self, host):
        self.host = host
        self.device_identities = set()
        self.deployable_names = set()

    def fail(self, where, problem):
        """Raise Invalid naming the host, the place and the problem."""
        raise exception.Invalid(
            reason='inventory report of host %s: %s: %s'
            % (self.host, where, problem))

    def field(self, entry, name, where, kind, required=True, default=None):
        """``entry[name]``, checked to be of ``kind`` and to fit its column."""
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
        """Fail when ``value`` overflows its column, or is an empty text."""
        limit = STRING_LIMITS.get(name)
        if limit is not None and len(value) > limit:
            self.fail(where, '%r is longer than %d characters' % (name, limit))
        if name in STRING_LIMITS and name not in ('cpid_info', 'attach_info') \
                and not value:
            self.fail(where, '%r is empty' % name)

    def json_text(self, value, name, where):
        """``value`` as canonical JSON text that fits its column."""
        try:
            text = canonical_json(value)
        except (TypeError, ValueError) as error:
            self.fail(where, '%r is not JSON serializable (%s)' % (name, error))
        self.check_length(text, name, where)
        return text

    def devices(self, entries):
        """Every reported device; the report itself must be a list."""
        if not isinstance(entries, (list, tuple)):
            self.fail('devices', 'expected a list, got %s'
                      % type(entries).__name__)
        return [self.device(entry, 'device %d' % index)
                for index, entry in enumerate(entries)]

    def device(self, entry, where):
        """One device; its control path id must be unique in the report."""
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
                         for child in deployables],
            reports_bitstreams=self.field(entry, 'reports_bitstreams', where,
                                          bool, required=False,
                                          default=False),
            **self.health(entry, where))

    def health(self, entry, where):
        """A device's ``health`` and ``health_reason`` (cut to fit)."""
        health = self.field(entry, 'health', where, str, required=False,
                            default=vocabulary.Health.HEALTHY)
        if health not in vocabulary.Health.ALL:
            self.fail(where, "'health' must be one of %s, got %r"
                      % (', '.join(vocabulary.Health.ALL), health))
        reason = entry.get('health_reason')
        if reason is not None:
            if not isinstance(reason, str):
                self.fail(where, "'health_reason' must be a string, got %s"
                          % type(reason).__name__)
            if len(reason) > HEALTH_REASON_LIMIT:
                reason = reason[:HEALTH_REASON_LIMIT - 3] + '...'
        return {'health': health, 'health_reason': reason or None}

    def deployable(self, entry, where, depth):
        """One deployable and its subtree; at ``depth`` 1 below the device."""
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
        self.check_bitstream(attributes.get(BITSTREAM_KEY), where)
        return ReportedDeployable(
            name=name, num_accelerators=num_accelerators,
            attributes=self.attributes(attributes, where, 1),
            attach_handles=handles,
            children=[self.deployable(child, where, depth + 1)
                      for child in children])

    def check_bitstream(self, value, where):
        """A ``bitstream_id`` attribute must be an image id that fits."""
        if value is None:
            return
        if not isinstance(value, str) or not value or \
                len(value) > BITSTREAM_LIMIT:
            self.fail(where, 'attribute %r must be a Glance image id (a '
                             'text of 1 to %d characters), got %r'
                      % (BITSTREAM_KEY, BITSTREAM_LIMIT, value))

    def attributes(self, attributes, where, depth):
        """A deployable's attributes; dict values become nested attributes."""
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
        """One attach handle: a known type and info mapping text to text."""
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
    """``kind`` (a type or a tuple of them) in words, for error messages."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {str: 'a string', int: 'an integer', bool: 'a boolean',
             dict: 'a dict', list: 'a list', tuple: 'a list'}
    return ' or '.join(dict.fromkeys(names[one] for one in kinds))


def validate(host, devices):
    """The report of ``host`` as ReportedDevice objects.

    :raises: cyborg.exception.Invalid naming the first problem found.
    """
    if not isinstance(host, str) or not host:
        raise exception.Invalid(reason='inventory report without a host name')
    return _Validator(host).devices(devices)
