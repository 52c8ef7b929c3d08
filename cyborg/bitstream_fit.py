"""Whether a bitstream fits an FPGA region: the rules of a fit.

A bitstream fits a region when its vendor, board, region and shell match
the card's (``check_fits``; doc/source/admin/bitstreams.rst). This module
calls nothing: callers hand in a ``cyborg.bitstream.Bitstream`` and the
``DeviceInfo`` of the region, built from its device rows. The error a
misfit raises, ``BitstreamMismatch``, is ``cyborg.bitstream``'s: that
module's errors are the ones an RPC caller may receive.
"""

import collections.abc
import dataclasses
import json
import re

from cyborg import bitstream as bitstreams
from cyborg import bitstream_topology

# A vendor given as a PCI vendor id rather than a name: 0x8086.
_VENDOR_ID = re.compile(r'^0x[0-9a-f]{1,4}$')


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
        ids (ints) to names, e.g. cyborg.common.vocabulary.VENDOR_NAMES.
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
    wanted = bitstreams.hex32(bitstream_region_uuid)
    return wanted is not None and wanted == bitstreams.hex32(region_id)


def shell_matches(shell_id, loaded_shell):
    """Whether the device can take the bitstream: a shell bitstream (no
    shell_id) always, a partial one only with that shell loaded."""
    if shell_id is None:
        return True
    wanted = bitstreams.hex32(shell_id)
    return wanted is not None and wanted == bitstreams.hex32(loaded_shell)


def _known(value):
    """A device fact for a message."""
    return 'unknown' if value is None else bitstream_topology.show(value)


def _mismatches(bitstream, device_info):
    """One sentence per rule ``bitstream`` breaks on ``device_info``."""
    reasons = []
    if not vendor_matches(bitstream.vendor, device_info.vendor_id,
                          device_info.vendor_name):
        reasons.append('Its vendor %s is neither the device\'s vendor id '
                       '(%s) nor its name (%s).'
                       % (bitstream_topology.show(bitstream.vendor),
                          _known(device_info.vendor_id),
                          _known(device_info.vendor_name)))
    if not board_matches(bitstream.board, device_info.board):
        reasons.append('Its board %s is not the device\'s board (%s).'
                       % (bitstream_topology.show(bitstream.board),
                          _known(device_info.board)))
    if not region_matches(bitstream.region_uuid, device_info.region_id):
        reasons.append('Its region_uuid %s is not the region\'s id (%s).'
                       % (bitstream.region_uuid,
                          _known(device_info.region_id)))
    if not shell_matches(bitstream.shell_id, device_info.loaded_shell):
        loaded = ('no shell is loaded' if device_info.loaded_shell is None
                  else 'shell %s is loaded'
                  % bitstream_topology.show(device_info.loaded_shell))
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
        raise bitstreams.BitstreamMismatch(
            reasons=reasons,
            bitstream='%s (%s)' % (bitstream.image_id, bitstream.bs_name),
            target=device_info.name)
