"""FPGA bitstream images: their metadata standard, read and checked.

The standard keeps an FPGA bitstream in Glance as an image tagged ``FPGA``
whose properties use standard keys (``KEYS``), ``topology`` being a JSON
text of the PFs and VFs the loaded bitstream gives (parsed by
``cyborg.bitstream_topology``). This is the one place knowing those keys
and their formats; whether a bitstream fits an FPGA region is
``cyborg.bitstream_fit``'s. It calls nothing: callers hand in Glance's
image dict. Decisions the standard leaves open: a value has at most 255
characters, the topology JSON 65,535 (Glance's column on MariaDB; its API
sets no limit); a uuid is 32 hex digits, dashes optional, any case, kept
dashed and lower-case; a nullable key may be absent, None or blank (null);
``topology`` is nullable (the standard's note makes it optional); other
keys (Glance's own ``id``, ``name``, ...) are left alone.
"""

import collections.abc
import dataclasses
import json
import re
import uuid

from cyborg import bitstream_topology
from cyborg import exception

TAG = 'FPGA'  # the Glance tag of every bitstream image
MAX_VALUE_LENGTH = 255
MAX_TOPOLOGY_LENGTH = 65535

TEXT = 'text'
UUID = 'uuid'
TOPOLOGY = 'topology'

_UUID = re.compile(r'^(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-'
                   r'[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$')


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


def hex32(value):
    """A uuid as 32 lower-case hex digits, or None if ``value`` is not one."""
    if isinstance(value, uuid.UUID):
        return value.hex
    if isinstance(value, str) and _UUID.match(value):
        return value.replace('-', '').lower()
    return None


def normalize_uuid(value):
    """The dashed lower-case form of a uuid given in either form, or None."""
    digits = hex32(value)
    return None if digits is None else str(uuid.UUID(hex=digits))


def uuid_spellings(value):
    """A uuid's spellings in Glance (which compares text): dashed, then
    plain hex, lower-case; None if ``value`` is no uuid."""
    dashed = normalize_uuid(value)
    return None if dashed is None else (dashed, dashed.replace('-', ''))


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
                % (key.name, bitstream_topology.show(value)))
        return normal, normal, None
    if not isinstance(value, str):
        return None, None, '%s must be a string, got %s.' % (
            key.name, bitstream_topology.json_type(value))
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
        return bitstream_topology.parse_topology(value), text, None
    except bitstream_topology.TopologyError as error:
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
    topology: bitstream_topology.Topology | None
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
