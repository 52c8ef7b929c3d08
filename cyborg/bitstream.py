"""FPGA bitstream images: their metadata standard, checked and matched.

The standard keeps an FPGA bitstream in Glance as an image tagged ``FPGA``
whose properties use standard keys (``KEYS``), ``topology`` being a JSON
text of the PFs and VFs the loaded bitstream gives (``Topology``). This is
the one place knowing those keys, their formats and whether a bitstream
fits an FPGA region (``check_fits``; doc/source/admin/bitstreams.rst). It
calls nothing: callers hand in Glance's image dict, or the device rows.
Decisions the seed leaves open: a value has at most 255 characters, the
topology JSON 65,535 (Glance's column on MariaDB; its API sets no limit);
a uuid is 32 hex digits, dashes optional, any case, kept dashed and
lower-case; a nullable key may be absent, None or blank (null);
``topology`` is nullable (the seed's note makes it optional); other keys
(Glance's own ``id``, ``name``, ...) are left alone.
"""

import collections.abc
import dataclasses
import json
import re
import uuid

from cyborg import exception

TAG = 'FPGA'  # the Glance tag of every bitstream image
MAX_VALUE_LENGTH = 255
MAX_TOPOLOGY_LENGTH = 65535
# Bounds of a topology, so that a bad one cannot make a driver build
# thousands of deployables.
MAX_PFS = 64
MAX_VFS_PER_PF = 256

TEXT = 'text'
UUID = 'uuid'
TOPOLOGY = 'topology'

_UUID = re.compile(r'^(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-'
                   r'[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$')
# A vendor given as a PCI vendor id rather than a name: 0x8086.
_VENDOR_ID = re.compile(r'^0x[0-9a-f]{1,4}$')
_SHOWN = 60


@dataclasses.dataclass(frozen=True)
class Key:
    """One standard key of the bitstream metadata."""

    name: str
    nullable: bool
    kind: str
    description: str

    @property
    def field(self):
        """The Bitstream attribute holding the key's value."""
        return self.name.replace('-', '_')


KEYS = (
    Key('bs-name', False, TEXT, 'Name of the bitstream (not unique).'),
    Key('bs-uuid', False, UUID, 'Uuid generated during synthesis.'),
    Key('vendor', False, TEXT, 'Vendor of the card: PCI vendor id or name.'),
    Key('board', False, TEXT, 'Board type the bitstream loads on.'),
    Key('shell_id', True, UUID, 'bs-uuid of the shell needed; null: a shell.'),
    Key('version', False, TEXT, 'Device version number.'),
    Key('driver', True, TEXT, 'Type of driver for the bitstream.'),
    Key('driver_ver', False, TEXT, 'Driver version.'),
    Key('driver_path', False, TEXT, 'Where to retrieve the driver.'),
    Key('topology', True, TOPOLOGY, 'Function topology (JSON).'),
    Key('description', True, TEXT, 'Description.'),
    Key('region_uuid', True, UUID, 'Type of region the bitstream needs.'),
    Key('function_uuid', False, UUID, 'Type of function of the bitstream.'),
    Key('function_name', True, TEXT, 'Name of the function.'),
)


class InvalidBitstream(exception.Invalid):
    """Bitstream metadata break the standard; one sentence per bad key."""

    def __init__(self, message=None, problems=(), image_id=None, **kwargs):
        problems = list(problems)
        if message is None:
            subject = ('Image %s is not a valid FPGA bitstream' % image_id
                       if image_id else 'The bitstream metadata are not valid')
            message = '%s: %s' % (subject, ' '.join(problems))
        super().__init__(message, problems=problems, image_id=image_id,
                         **kwargs)
        self.problems = problems


class BitstreamMismatch(exception.Conflict):
    """A bitstream does not fit a device; the message names each reason."""

    def __init__(self, message=None, reasons=(), bitstream=None, target=None,
                 **kwargs):
        reasons = list(reasons)
        if message is None:
            message = 'Bitstream %s does not fit %s: %s' % (
                bitstream, target or 'the device', ' '.join(reasons))
        super().__init__(message, reasons=reasons, bitstream=bitstream,
                         target=target, **kwargs)
        self.reasons = reasons


def _show(value):
    """``value`` for a message, cut so that a huge value stays readable."""
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + '...'


def _hex32(value):
    """A uuid as 32 lower-case hex digits, or None if ``value`` is not one."""
    if isinstance(value, uuid.UUID):
        return value.hex
    if isinstance(value, str) and _UUID.match(value):
        return value.replace('-', '').lower()
    return None


def normalize_uuid(value):
    """The dashed lower-case form of a uuid given in either form, or None."""
    digits = _hex32(value)
    return None if digits is None else str(uuid.UUID(hex=digits))


def uuid_spellings(value):
    """A uuid's spellings in Glance (which compares text): dashed, then
    plain hex, lower-case; None if ``value`` is no uuid."""
    dashed = normalize_uuid(value)
    return None if dashed is None else (dashed, dashed.replace('-', ''))


# Topology ---------------------------------------------------------------

class TopologyError(ValueError):
    """A topology that does not follow the standard's shape."""


@dataclasses.dataclass(frozen=True)
class VirtualFunction:
    """A VF of the loaded bitstream (a deployable below its PF)."""

    name: str
    pci_offset: int | None = None


@dataclasses.dataclass(frozen=True)
class PhysicalFunction:
    """A PF of the loaded bitstream and its VFs."""

    name: str
    capability: str = ''
    kpi: str = ''
    pci_offset: int | None = None
    vfs: tuple = ()


@dataclasses.dataclass(frozen=True)
class Topology:
    """What the ``topology`` JSON describes: PFs, each with its VFs."""

    pfs: tuple = ()

    @property
    def pf_num(self):
        return len(self.pfs)

    @property
    def vf_num(self):
        return sum(len(pf.vfs) for pf in self.pfs)


def parse_topology(value):
    """The Topology of a JSON text or of the object it decodes to.

    Keys besides the standard ones are allowed (vendors may add their own)
    and left out of the result; the known ones are checked.

    :raises: TopologyError with one sentence naming the first problem
    """
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as error:
            raise TopologyError('topology is not valid JSON: %s.' % error)
    if not isinstance(value, dict):
        raise TopologyError('topology must be a JSON object, got %s.'
                            % _json_type(value))
    entries = _list(value, 'pf', 'pf', MAX_PFS)
    pfs = tuple(_physical_function(entry, 'pf[%d]' % index)
                for index, entry in enumerate(entries))
    topology = Topology(pfs=pfs)
    _check_count(value, 'pf_num', topology.pf_num, 'physical functions')
    _check_count(value, 'vf_num', topology.vf_num, 'virtual functions')
    return topology


_JSON_TYPES = ((bool, 'a boolean'), ((int, float), 'a number'),
               (str, 'a string'), ((list, tuple), 'a list'),
               (dict, 'an object'), (type(None), 'null'))


def _json_type(value):
    """How JSON calls the type of ``value``."""
    for kind, name in _JSON_TYPES:
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _list(mapping, key, where, limit):
    """The list at ``mapping[key]`` (empty if absent), of at most ``limit``."""
    entries = mapping.get(key, [])
    if not isinstance(entries, (list, tuple)):
        raise TopologyError('topology: %s must be a list, got %s.'
                            % (where, _json_type(entries)))
    if len(entries) > limit:
        raise TopologyError('topology: %s has %d entries; at most %d are '
                            'allowed.' % (where, len(entries), limit))
    return entries


def _object(entry, where):
    if not isinstance(entry, dict):
        raise TopologyError('topology: %s must be an object, got %s.'
                            % (where, _json_type(entry)))
    return entry


def _physical_function(entry, where):
    _object(entry, where)
    vfs = _list(entry, 'vf', where + '.vf', MAX_VFS_PER_PF)
    return PhysicalFunction(
        name=_name(entry, where),
        capability=_string(entry, 'capability', where),
        kpi=_string(entry, 'kpi', where),
        pci_offset=_pci_offset(entry, where),
        vfs=tuple(_virtual_function(vf, '%s.vf[%d]' % (where, index))
                  for index, vf in enumerate(vfs)))


def _virtual_function(entry, where):
    _object(entry, where)
    return VirtualFunction(name=_name(entry, where),
                           pci_offset=_pci_offset(entry, where))


def _name(entry, where):
    name = entry.get('name')
    if not isinstance(name, str) or not name.strip():
        raise TopologyError('topology: %s.name must be a non-empty string, '
                            'got %s.' % (where, _show(name)))
    return name


def _string(entry, key, where):
    value = entry.get(key, '')
    if not isinstance(value, str):
        raise TopologyError('topology: %s.%s must be a string, got %s.'
                            % (where, key, _json_type(value)))
    return value


def _pci_offset(entry, where):
    """The entry's pci_offset as an int: a number or a string of digits."""
    value = entry.get('pci_offset')
    if value is None or value == '':
        return None
    if isinstance(value, str) and value.isdigit() and value.isascii():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise TopologyError('topology: %s.pci_offset must be a non-negative '
                        'integer, got %s.' % (where, _show(value)))


def _check_count(mapping, key, actual, what):
    """``mapping[key]``, when given, must equal the number counted."""
    if key not in mapping:
        return
    declared = mapping[key]
    if isinstance(declared, bool) or not isinstance(declared, int):
        raise TopologyError('topology: %s must be a non-negative integer, '
                            'got %s.' % (key, _show(declared)))
    if declared != actual:
        raise TopologyError('topology: %s is %d but %d %s are listed.'
                            % (key, declared, actual, what))


def _parse_value(key, value):
    """``(parsed, property text, problem)`` of one key's value.

    ``parsed`` is what Bitstream holds, ``property text`` what Glance
    stores (None for null) and ``problem`` one sentence, or None.
    """
    if value is None or isinstance(value, str) and not value.strip():
        if key.nullable:
            return None, None, None
        return None, None, '%s is required but %s.' % (
            key.name, 'missing' if value is None else 'empty')
    if key.kind == TOPOLOGY:
        return _parse_topology_value(key, value)
    if key.kind == UUID:
        normal = normalize_uuid(value)
        if normal is None:
            return None, None, (
                '%s must be a UUID (32 hex digits, dashes optional), got %s.'
                % (key.name, _show(value)))
        return normal, normal, None
    if not isinstance(value, str):
        return None, None, '%s must be a string, got %s.' % (
            key.name, _json_type(value))
    problem = _length_problem(key, value, MAX_VALUE_LENGTH)
    return (None, None, problem) if problem else (value, value, None)


def _parse_topology_value(key, value):
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, separators=(',', ':'))
        except (TypeError, ValueError):
            return None, None, ('%s must be a JSON text or object, got %s.'
                                % (key.name, type(value).__name__))
    problem = _length_problem(key, text, MAX_TOPOLOGY_LENGTH)
    if problem:
        return None, None, problem
    try:
        return parse_topology(value), text, None
    except TopologyError as error:
        return None, None, str(error)


def _length_problem(key, text, limit):
    if len(text) > limit:
        return '%s is %d characters long; at most %d are allowed.' % (
            key.name, len(text), limit)
    return None


def _parse_properties(properties):
    """``(fields, texts, problems)``: Bitstream fields by attribute name,
    Glance property texts by key, a sentence per bad key (KEYS order)."""
    fields, texts, problems = {}, {}, []
    for key in KEYS:
        parsed, text, problem = _parse_value(key, properties.get(key.name))
        if problem:
            problems.append(problem)
            continue
        fields[key.field] = parsed
        if text is not None:
            texts[key.name] = text
    return fields, texts, problems


def validate_properties(properties):
    """The problems of ``properties`` (standard keys; others are ignored):
    one sentence per bad key, an empty list when they follow the standard."""
    if not isinstance(properties, collections.abc.Mapping):
        return ['The properties must be a mapping, got %s.'
                % type(properties).__name__]
    return _parse_properties(properties)[2]


def to_properties(values):
    """The Glance image properties of the standard keys in ``values``:
    uuids dashed and lower-case, a topology object as compact JSON, null
    values left out, other keys ignored.

    :raises: InvalidBitstream naming every bad key
    """
    problems = validate_properties(values)
    if problems:
        raise InvalidBitstream(problems=problems)
    return _parse_properties(values)[1]


@dataclasses.dataclass(frozen=True)
class Bitstream:
    """A bitstream image of Glance: its identity and its bitstream metadata.

    Uuids are dashed and lower-case; null keys are None.
    """

    image_id: str
    name: str | None
    bs_name: str
    bs_uuid: str
    vendor: str
    board: str
    shell_id: str | None
    version: str
    driver: str | None
    driver_ver: str
    driver_path: str
    topology: Topology | None
    description: str | None
    region_uuid: str | None
    function_uuid: str
    function_name: str | None

    @property
    def is_partial(self):
        """A partial (PR) bitstream needs a shell; a shell has no shell_id."""
        return self.shell_id is not None

    @classmethod
    def from_image(cls, image):
        """The Bitstream of ``image``, a dict as Glance v2 returns it
        (properties are top-level keys, ``tags`` a list).

        :raises: InvalidBitstream naming every bad key and a missing tag
        """
        image_id = image.get('id')
        fields, _texts, problems = _parse_properties(image)
        if not isinstance(image_id, str) or not image_id:
            problems.insert(0, 'The image has no id.')
        if not has_tag(image):
            tags = image.get('tags')
            listed = isinstance(tags, (list, tuple)) and tags
            problems.append('The image is not tagged %s (its tags: %s).' % (
                TAG, ', '.join(map(str, tags)) if listed else 'none'))
        if problems:
            raise InvalidBitstream(problems=problems, image_id=image_id)
        return cls(image_id=image_id, name=image.get('name'), **fields)


def has_tag(image):
    """Whether the Glance image dict carries the FPGA tag (case matters)."""
    tags = image.get('tags')
    return isinstance(tags, (list, tuple)) and TAG in tags


# Matching ---------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class DeviceInfo:
    """What a bitstream is matched against: one FPGA region and its card.

    ``vendor_id`` is the card's PCI vendor id (``devices.vendor``, e.g.
    ``'0x8086'``), ``vendor_name`` its name (``intel``) or None, ``board``
    the board its driver reports, ``region_id`` the region's id (its
    ``region_id`` attribute, 32 hex digits) or None, ``loaded_shell`` the
    bs-uuid of the shell loaded on the card or None, ``name`` what to call
    the region in messages (the deployable's name).
    """

    vendor_id: str | int | None
    vendor_name: str | None = None
    board: str | None = None
    region_id: str | None = None
    loaded_shell: str | None = None
    name: str | None = None

    @classmethod
    def from_rows(cls, device, deployable, attributes, vendor_names=None):
        """The DeviceInfo of a device row, one of its deployables and that
        deployable's attributes.

        ``device`` has ``vendor``, ``model`` and ``vendor_board_info`` (JSON
        text or dict): the board is its ``board`` key (fake driver), else
        the model (Intel driver); the loaded shell is its ``shell_id`` key.
        ``attributes`` is a mapping, Attribute rows (``key``, ``value``) or
        a Deployable's ``attributes_list``. ``vendor_names`` maps PCI vendor
        ids (ints) to names, e.g. cyborg.agent.drivers.base.VENDOR_NAMES.
        """
        info = _board_info(device.vendor_board_info)
        names = vendor_names or {}
        return cls(
            vendor_id=device.vendor,
            vendor_name=names.get(_vendor_number(device.vendor)),
            board=info.get('board') or device.model,
            region_id=_attribute_map(attributes).get('region_id'),
            loaded_shell=info.get('shell_id'),
            name=deployable.name)


def _board_info(value):
    """A device's vendor_board_info as a dict; {} when absent or broken."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _attribute_map(attributes):
    """``{key: value}`` of a mapping, Attribute rows or an attributes_list."""
    if isinstance(attributes, collections.abc.Mapping):
        return dict(attributes)
    found = {}
    for attribute in attributes or ():
        if isinstance(attribute, collections.abc.Mapping):
            found.update(attribute)
        else:
            found[attribute.key] = attribute.value
    return found


def _vendor_number(value):
    """A PCI vendor id given as an int, ``'0x8086'`` or ``'8086'``; or None."""
    if isinstance(value, str):
        try:
            return int(value.strip(), 16)
        except ValueError:
            return None
    is_number = isinstance(value, int) and not isinstance(value, bool)
    return value if is_number else None


def _folded(text):
    """``text`` stripped and case-folded; None unless a non-blank string."""
    if not isinstance(text, str) or not text.strip():
        return None
    return text.strip().casefold()


def vendor_matches(bitstream_vendor, device_vendor_id,
                   device_vendor_name=None):
    """Whether the bitstream's ``vendor`` names the device's vendor.

    A vendor written ``0x`` and hex digits is a PCI vendor id, compared as a
    number with ``device_vendor_id``; anything else is a name, compared
    case-insensitively with ``device_vendor_name``.
    """
    wanted = _folded(bitstream_vendor)
    if wanted is not None and _VENDOR_ID.match(wanted):
        return _vendor_number(device_vendor_id) == int(wanted, 16)
    return wanted is not None and wanted == _folded(device_vendor_name)


def board_matches(bitstream_board, device_board):
    """Whether the boards are the same, ignoring case."""
    wanted = _folded(bitstream_board)
    return wanted is not None and wanted == _folded(device_board)


def region_matches(bitstream_region_uuid, region_id):
    """Whether the region fits: always without a region_uuid, else when
    both are the same uuid (32 hex digits or dashed, any case)."""
    if bitstream_region_uuid is None:
        return True
    wanted = _hex32(bitstream_region_uuid)
    return wanted is not None and wanted == _hex32(region_id)


def shell_matches(shell_id, loaded_shell):
    """Whether the device can take the bitstream: a shell bitstream (no
    shell_id) always, a partial one only with that shell loaded."""
    if shell_id is None:
        return True
    wanted = _hex32(shell_id)
    return wanted is not None and wanted == _hex32(loaded_shell)


def _known(value):
    """A device fact for a message."""
    return 'unknown' if value is None else _show(value)


def _mismatches(bitstream, device_info):
    """One sentence per rule ``bitstream`` breaks on ``device_info``."""
    reasons = []
    if not vendor_matches(bitstream.vendor, device_info.vendor_id,
                          device_info.vendor_name):
        reasons.append('Its vendor %s is neither the device\'s vendor id '
                       '(%s) nor its name (%s).'
                       % (_show(bitstream.vendor),
                          _known(device_info.vendor_id),
                          _known(device_info.vendor_name)))
    if not board_matches(bitstream.board, device_info.board):
        reasons.append('Its board %s is not the device\'s board (%s).'
                       % (_show(bitstream.board), _known(device_info.board)))
    if not region_matches(bitstream.region_uuid, device_info.region_id):
        reasons.append('Its region_uuid %s is not the region\'s id (%s).'
                       % (bitstream.region_uuid,
                          _known(device_info.region_id)))
    if not shell_matches(bitstream.shell_id, device_info.loaded_shell):
        loaded = ('no shell is loaded' if device_info.loaded_shell is None
                  else 'shell %s is loaded' % _show(device_info.loaded_shell))
        reasons.append('It is a partial bitstream needing shell %s, but %s.'
                       % (bitstream.shell_id, loaded))
    return reasons


def check_fits(bitstream, device_info):
    """Pass when ``bitstream`` may be loaded into the region of
    ``device_info``.

    :raises: BitstreamMismatch naming every rule that does not hold
    """
    reasons = _mismatches(bitstream, device_info)
    if reasons:
        raise BitstreamMismatch(
            reasons=reasons,
            bitstream='%s (%s)' % (bitstream.image_id, bitstream.bs_name),
            target=device_info.name)
