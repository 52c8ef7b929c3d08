"""Running a vendor's programming tool, bounded in time, as a ProgramOutcome.

The Intel and Xilinx drivers program a card by running their vendor's tool
(OPAE's ``fpgaconf``, XRT's ``xbmgmt``) on the card's PCI function. Both go
through ``run_tool``: the command is an argument list (never a shell), it
gets a time limit, and whatever happens (exit status, time-out, missing or
unusable executable) becomes a ``base.ProgramOutcome`` with the programming
result code and a message naming the tool and, on failure, the end of what it printed.
``pci_target`` checks the device and region named by the caller first.
``query_tool`` runs a tool that reads a card (what a region holds, its
shell) the same way and returns its output, or raises
``base.ReadbackFailed`` saying why it cannot; ``parse_fields`` reads the
``Key : Value`` lines such tools print.
"""

import dataclasses
import logging
import os
import re
import subprocess

from cyborg.agent.drivers import base
from cyborg.common import vocabulary

LOG = logging.getLogger(__name__)

# How much of the tool's output a failure message keeps (its end).
OUTPUT_TAIL = 500
# A query (reading a card) is given at most this many seconds.
QUERY_TIMEOUT = 60
# "  Platform UUID        : 1234..." (a key, a colon, a value).
_FIELD = re.compile(r'^\s*([A-Za-z][A-Za-z0-9 ()/_.-]*?)\s*:\s*(\S.*?)\s*$')


@dataclasses.dataclass(frozen=True)
class Tool:
    """A programming tool: its executable, its time limit in seconds and
    the option naming the executable (for messages)."""

    path: str
    timeout: float
    option: str


def _outcome(code, message):
    """A ProgramOutcome, logged (a failure at WARNING)."""
    if code is vocabulary.ProgramResult.SUCCESS:
        LOG.info('%s', message)
    else:
        LOG.warning('Programming failed (%s): %s', code.name, message)
    return base.ProgramOutcome(code, message)


def pci_target(controlpath_id, deployable_name):
    """The PCI address of the device to program, or the outcome refusing it.

    The control path must be a PCI address; ``deployable_name``, when
    given, must be one of that card's deployables (``fpga-<address>`` or a
    name below it, as the drivers name them).

    :returns: (address, None) or (None, an INVALID_DEPLOYABLE outcome)
    """
    info = getattr(controlpath_id, 'cpid_info', None) or {}
    try:
        address = base.pci_address(info)
    except (KeyError, TypeError):
        address = None
    if getattr(controlpath_id, 'cpid_type', None) != 'PCI' or \
            not base.is_pci_address(address):
        return None, _outcome(vocabulary.ProgramResult.INVALID_DEPLOYABLE,
                              'control path %r is not a PCI function'
                              % (controlpath_id,))
    card = 'fpga-' + address
    if deployable_name is not None and deployable_name != card and \
            not deployable_name.startswith(card + '-'):
        return None, _outcome(vocabulary.ProgramResult.INVALID_DEPLOYABLE,
                              'deployable %s is not on the card at %s'
                              % (deployable_name, address))
    return address, None


def _tail(output):
    """The end of a tool's output (bytes) as one line of text."""
    text = (output or b'').decode('utf-8', errors='replace').strip()
    text = ' '.join(text.split())
    if len(text) > OUTPUT_TAIL:
        text = '...' + text[-OUTPUT_TAIL:]
    return text


def run_tool(tool, arguments, bitstream_path, target):
    """Run ``tool`` with ``arguments`` to load ``bitstream_path`` into
    ``target`` (what to call the device in messages); the outcome.

    The bitstream file must exist (else INVALID_BITSTREAM, nothing run).
    Exit status 0 is SUCCESS; a non-zero status FAILED with the end of the
    tool's error output (or its output when that is empty); a tool still
    running after ``tool.timeout`` seconds is killed and FAILED; an
    executable that is missing or cannot be run FAILED, naming the option.
    """
    if not os.path.isfile(bitstream_path):
        return _outcome(vocabulary.ProgramResult.INVALID_BITSTREAM,
                        'bitstream file %s does not exist' % bitstream_path)
    command = [tool.path] + list(arguments)
    name = os.path.basename(tool.path)
    LOG.info('Programming %s: %s', target, ' '.join(command))
    try:
        completed = subprocess.run(
            command, capture_output=True, stdin=subprocess.DEVNULL,
            timeout=tool.timeout, check=False)
    except subprocess.TimeoutExpired:
        return _outcome(vocabulary.ProgramResult.FAILED,
                        '%s did not finish programming %s within %s seconds '
                        'and was killed; the region may need programming '
                        'again' % (name, target, tool.timeout))
    except FileNotFoundError:
        return _outcome(vocabulary.ProgramResult.FAILED,
                        'programming tool %s not found (set %s)'
                        % (tool.path, tool.option))
    except OSError as error:
        return _outcome(vocabulary.ProgramResult.FAILED,
                        'programming tool %s cannot be run (%s): %s'
                        % (tool.path, tool.option, error))
    if completed.returncode != 0:
        output = _tail(completed.stderr) or _tail(completed.stdout)
        how = ('exited with %d' % completed.returncode
               if completed.returncode > 0
               else 'was killed by signal %d' % -completed.returncode)
        return _outcome(vocabulary.ProgramResult.FAILED,
                        '%s %s programming %s: %s'
                        % (name, how, target, output or '(no output)'))
    return _outcome(vocabulary.ProgramResult.SUCCESS,
                    '%s loaded %s into %s' % (name, bitstream_path, target))


def query_tool(tool, arguments, target):
    """Run ``tool`` with ``arguments`` to read ``target`` (what to call the
    device in messages); its standard output as text.

    The tool gets ``tool.timeout`` seconds, at most QUERY_TIMEOUT.

    :raises: base.ReadbackFailed when the tool is missing, cannot be run,
        runs out of time or exits with a non-zero status (with the end of
        its error output)
    """
    command = [tool.path] + list(arguments)
    name = os.path.basename(tool.path)
    timeout = min(tool.timeout, QUERY_TIMEOUT)
    try:
        completed = subprocess.run(
            command, capture_output=True, stdin=subprocess.DEVNULL,
            timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise base.ReadbackFailed('%s did not finish reading %s within %s '
                                  'seconds' % (name, target, timeout)) from None
    except FileNotFoundError:
        raise base.ReadbackFailed('tool %s not found (set %s)'
                                  % (tool.path, tool.option)) from None
    except OSError as error:
        raise base.ReadbackFailed('tool %s cannot be run (%s): %s'
                                  % (tool.path, tool.option, error)) from None
    if completed.returncode != 0:
        output = _tail(completed.stderr) or _tail(completed.stdout)
        raise base.ReadbackFailed('%s exited with %d reading %s: %s'
                                  % (name, completed.returncode, target,
                                     output or '(no output)'))
    return completed.stdout.decode('utf-8', errors='replace')


def parse_fields(text):
    """``{key: value}`` of the ``Key : Value`` lines of ``text``, keys
    case-folded with their spaces single; the first line of a key wins."""
    fields = {}
    for line in text.splitlines():
        match = _FIELD.match(line)
        if match is not None:
            key = ' '.join(match.group(1).casefold().split())
            fields.setdefault(key, match.group(2))
    return fields
