"""An FPGA card's health from what its vendor's tool reports.

* Intel: OPAE's ``fpgainfo errors all`` on the card's physical function
  prints the error registers of its FPGA Management Engine (``FME
  ERRORS``) and of its ports (``PORT ERRORS``) as ``Key : 0x<hex>``
  lines. The registers latch an error until it is cleared (``fpgainfo
  errors all --clear``, a reset): ``Catfatal Errors`` not zero (a
  catastrophic or fatal error: the card must be reset) is ``failed``;
  any other error register not zero (``Errors``, ``Nonfatal Errors``,
  ``PCIe0 Errors``, ``PCIe1 Errors``, a port's ``Errors``) is
  ``degraded``; all zero is ``healthy``.
* Xilinx: XRT's ``xbmgmt examine`` (the call that also tells the shell)
  reports the card's AXI firewall: a ``Firewall Level`` (or a
  ``Level`` line in its ``Firewall`` section) above 0 means the firewall
  tripped and the card is unusable until it is reset: ``failed``. An
  ``Asynchronous Errors`` section listing errors (anything but a header
  or ``No errors``) is ``degraded``.

Output that says nothing of errors is ``healthy``: the drivers cannot tell
otherwise, and a card is not taken out of the offer for a tool's silence.
"""

import re

from cyborg.common import vocabulary

HEALTH = vocabulary.Health
# "//****** FME ERRORS ******//": a section of fpgainfo's output.
_FPGAINFO_SECTION = re.compile(r'^\s*//\**\s*([A-Z ]+?)\s*ERRORS\s*\**//\s*$')
_FIELD = re.compile(r'^\s*([A-Za-z][A-Za-z0-9 ]*?)\s*:\s*(\S+)')
# FME registers whose bits are a fatal error.
_FATAL = ('catfatal errors',)
# Registers whose bits are an error the card survives.
_NON_FATAL = ('errors', 'nonfatal errors', 'pcie0 errors', 'pcie1 errors')


def _register(value):
    """The integer of a register's ``0x..`` text, None when not one."""
    try:
        return int(value, 16)
    except ValueError:
        return None


def fpgainfo_sections(text):
    """``{section: {key: value}}`` of ``fpgainfo errors all`` output,
    sections ``fme`` and ``port`` (keys case-folded)."""
    sections = {}
    current = None
    for line in text.splitlines():
        header = _FPGAINFO_SECTION.match(line)
        if header is not None:
            current = sections.setdefault(header.group(1).strip().lower(), {})
            continue
        match = _FIELD.match(line)
        if match is not None and current is not None:
            key = ' '.join(match.group(1).casefold().split())
            current.setdefault(key, match.group(2))
    return sections


def fpgainfo_health(text):
    """``(health, reason)`` of a card from its ``fpgainfo errors all``
    output."""
    fatal = []
    other = []
    for section, fields in sorted(fpgainfo_sections(text).items()):
        for key, value in fields.items():
            register = _register(value)
            if not register:
                continue
            words = '%s %s 0x%x' % (section.upper(), key, register)
            if section == 'fme' and key in _FATAL:
                fatal.append(words)
            elif key in _NON_FATAL:
                other.append(words)
    if fatal:
        return HEALTH.FAILED, 'fpgainfo: ' + ', '.join(fatal + other)
    if other:
        return HEALTH.DEGRADED, 'fpgainfo: ' + ', '.join(other)
    return HEALTH.HEALTHY, None


def xbmgmt_health(text):
    """``(health, reason)`` of a card from its ``xbmgmt examine``
    output."""
    level = None
    in_firewall = False
    in_errors = False
    errors = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        indented = line[:1].isspace()
        if not indented:
            in_firewall = 'firewall' in stripped.casefold()
            in_errors = 'asynchronous error' in stripped.casefold()
        match = _FIELD.match(line)
        if match is not None:
            key = ' '.join(match.group(1).casefold().split())
            if key == 'firewall level' or (in_firewall and key == 'level'):
                number = re.match(r'\d+', match.group(2))
                if number is not None and level is None:
                    level = int(number.group())
                continue
        if in_errors and indented and not _is_errors_header(stripped):
            errors.append(stripped)
    if level:
        return (HEALTH.FAILED,
                'xbmgmt: the AXI firewall tripped (level %d): the card '
                'needs a reset' % level)
    if errors:
        return HEALTH.DEGRADED, 'xbmgmt: asynchronous error: ' + errors[0]
    return HEALTH.HEALTHY, None


def _is_errors_header(line):
    folded = line.casefold()
    return folded.startswith(('time', 'no ', 'none', '---', '==='))
