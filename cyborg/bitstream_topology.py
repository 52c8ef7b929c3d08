"""The ``topology`` of a bitstream: the PFs and VFs it gives, as JSON.

A bitstream's metadata may carry a JSON text of the physical functions
(PFs) and virtual functions (VFs) that loading it gives. This module checks
that text against the standard's shape, within bounds, and turns it into a
``Topology``; ``cyborg.bitstream`` parses the other keys.
"""

import dataclasses
import json

# Bounds of a topology, so that a bad one cannot make a driver build
# thousands of deployables.
MAX_PFS = 64
MAX_VFS_PER_PF = 256

_SHOWN = 60


def show(value):
    """``value`` for a message, cut so that a huge value stays readable."""
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + '...'


_JSON_TYPES = ((bool, 'a boolean'), ((int, float), 'a number'),
               (str, 'a string'), ((list, tuple), 'a list'),
               (dict, 'an object'), (type(None), 'null'))


def json_type(value):
    """How JSON calls the type of ``value``."""
    for kind, name in _JSON_TYPES:
        if isinstance(value, kind):
            return name
    return type(value).__name__


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
                            % json_type(value))
    entries = _list(value, 'pf', 'pf', MAX_PFS)
    pfs = tuple(_physical_function(entry, 'pf[%d]' % index)
                for index, entry in enumerate(entries))
    topology = Topology(pfs=pfs)
    _check_count(value, 'pf_num', topology.pf_num, 'physical functions')
    _check_count(value, 'vf_num', topology.vf_num, 'virtual functions')
    return topology


def _list(mapping, key, where, limit):
    """The list at ``mapping[key]`` (empty if absent), of at most ``limit``."""
    entries = mapping.get(key, [])
    if not isinstance(entries, (list, tuple)):
        raise TopologyError('topology: %s must be a list, got %s.'
                            % (where, json_type(entries)))
    if len(entries) > limit:
        raise TopologyError('topology: %s has %d entries; at most %d are '
                            'allowed.' % (where, len(entries), limit))
    return entries


def _object(entry, where):
    if not isinstance(entry, dict):
        raise TopologyError('topology: %s must be an object, got %s.'
                            % (where, json_type(entry)))
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
                            'got %s.' % (where, show(name)))
    return name


def _string(entry, key, where):
    value = entry.get(key, '')
    if not isinstance(value, str):
        raise TopologyError('topology: %s.%s must be a string, got %s.'
                            % (where, key, json_type(value)))
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
                        'integer, got %s.' % (where, show(value)))


def _check_count(mapping, key, actual, what):
    """``mapping[key]``, when given, must equal the number counted."""
    if key not in mapping:
        return
    declared = mapping[key]
    if isinstance(declared, bool) or not isinstance(declared, int):
        raise TopologyError('topology: %s must be a non-negative integer, '
                            'got %s.' % (key, show(declared)))
    if declared != actual:
        raise TopologyError('topology: %s is %d but %d %s are listed.'
                            % (key, declared, actual, what))
