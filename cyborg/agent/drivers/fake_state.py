"""What the fake driver's simulated FPGAs hold, kept across restarts.

A real FPGA keeps its bitstream when the services that programmed it stop
and start again; only a power cycle empties it. The fake driver simulates
that with a small JSON file per host, ``fake-driver-<host>.json`` in the
agent's ``[DEFAULT] state_path``: after each successful programming it
writes, for each card (by the PCI address of its control path) and each of
its programmed regions, the ``fake_fpga.Loaded`` the region holds, and a
new driver reads the file once, at its start. Removing the file while the
agent is stopped is the simulation's power cycle: the cards come back
blank at its next start.

The file is replaced whole (written to a temporary file of the same
directory, then renamed over it), so a crash never leaves half of it. The
state path is not created: without it (or when the file cannot be
written) the simulated cards keep what they hold only while the driver
runs, and the driver says so once. A file that cannot be read or does not
follow the format below is logged and ignored: the cards start blank.

Format::

    {"version": 1, "host": "<host>",
     "cards": {"<card PCI address>": {"<region name>": {
         "bitstream_path": "...", "bitstream_id": "<Glance image id>",
         "function_id": "<32 hex digits>", "function_name": "...",
         "topology": {"pf": [{"name": ..., "vf": [{"name": ...}]}]}}}}}

The keys but ``bitstream_path`` may be null.
"""

import json
import logging
import os
import re
import tempfile

from cyborg import bitstream_topology
from cyborg.agent.drivers import fake_fpga

LOG = logging.getLogger(__name__)

VERSION = 1
FILE_PREFIX = 'fake-driver-'
# Characters a host name may bring into the file name; others become '_'.
_UNSAFE = re.compile(r'[^A-Za-z0-9._-]')
_TEXT_KEYS = ('bitstream_id', 'function_id', 'function_name')


class BadState(ValueError):
    """A state file that does not follow the format."""


def state_file(state_path, host):
    """The file keeping what the simulated cards of ``host`` hold."""
    return os.path.join(state_path, '%s%s.json'
                        % (FILE_PREFIX, _UNSAFE.sub('_', host)))


class StateFile:
    """The state file of ``host`` in ``state_path``, as one driver uses it:
    read at its start, written after each successful programming."""

    def __init__(self, state_path, host):
        self.host = host
        self.path = state_file(state_path, host)
        # Whether the driver said already that the state cannot be kept.
        self._unsaved_logged = False

    def read(self):
        """{(card address, region name): Loaded} the file holds."""
        loaded = read(self.path)
        if loaded:
            LOG.info('Simulated FPGA regions hold what was loaded before '
                     'the restart (%s): %s', self.path,
                     ', '.join(sorted(name for _, name in loaded)))
        return loaded

    def write(self, loaded):
        """Keep ``loaded`` ({(card address, region name): Loaded}); a
        failure is said once, and the state then lasts while the driver
        runs."""
        try:
            write(self.path, self.host, loaded)
        except OSError as error:
            if not self._unsaved_logged:
                self._unsaved_logged = True
                LOG.warning('What the simulated FPGAs hold will not survive '
                            'a restart of the agent: their state file %s '
                            'cannot be written: %s', self.path, error)


def read(path):
    """{(card address, region name): Loaded} of the file at ``path``;
    empty when there is no file (the cards were never programmed, or
    were power cycled) or it is unusable (logged)."""
    try:
        with open(path, encoding='utf-8') as stream:
            data = json.load(stream)
        return _decode(data)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        # ValueError covers BadState and JSON decoding.
        LOG.warning('The simulated FPGAs start blank: their state file %s '
                    'is unusable: %s', path, error)
        return {}


def write(path, host, loaded):
    """Replace the file at ``path`` with ``loaded`` ({(card address, region
    name): Loaded}) of ``host``, atomically.

    :raises: OSError
    """
    cards = {}
    for (card, region), state in sorted(loaded.items()):
        cards.setdefault(card, {})[region] = _encode_loaded(state)
    text = json.dumps({'version': VERSION, 'host': host, 'cards': cards},
                      indent=1, sort_keys=True)
    directory = os.path.dirname(path) or '.'
    descriptor, partial = tempfile.mkstemp(
        prefix='.' + os.path.basename(path) + '.', dir=directory)
    try:
        with os.fdopen(descriptor, 'w', encoding='utf-8') as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(partial, path)
    except BaseException:
        try:
            os.unlink(partial)
        except OSError:
            pass
        raise


def _encode_loaded(state):
    value = {'bitstream_path': state.bitstream_path}
    value.update((key, getattr(state, key)) for key in _TEXT_KEYS)
    value['topology'] = None if state.topology is None else \
        encode_topology(state.topology)
    return value


def encode_topology(topology):
    """``topology`` (a cyborg.bitstream_topology.Topology) as the JSON object
    ``cyborg.bitstream_topology.parse_topology`` reads back."""
    return {'pf': [
        {'name': pf.name, 'capability': pf.capability, 'kpi': pf.kpi,
         'pci_offset': pf.pci_offset,
         'vf': [{'name': vf.name, 'pci_offset': vf.pci_offset}
                for vf in pf.vfs]}
        for pf in topology.pfs]}


def _decode(data):
    if not isinstance(data, dict) or data.get('version') != VERSION:
        raise BadState('expected an object of version %d' % VERSION)
    cards = data.get('cards')
    if not isinstance(cards, dict):
        raise BadState("'cards' must be an object")
    loaded = {}
    for card, regions in cards.items():
        if not isinstance(regions, dict):
            raise BadState('card %s: expected an object of regions' % card)
        for region, value in regions.items():
            loaded[(card, region)] = _decode_loaded(
                value, 'card %s region %s' % (card, region))
    return loaded


def _decode_loaded(value, where):
    if not isinstance(value, dict) or \
            not isinstance(value.get('bitstream_path'), str):
        raise BadState('%s: expected an object with a bitstream_path' % where)
    texts = {}
    for key in _TEXT_KEYS:
        text = value.get(key)
        if text is not None and not isinstance(text, str):
            raise BadState('%s: %s must be a string or null' % (where, key))
        texts[key] = text
    topology = value.get('topology')
    if topology is not None:
        try:
            topology = bitstream_topology.parse_topology(topology)
        except bitstream_topology.TopologyError as error:
            raise BadState('%s: %s' % (where, error)) from error
    return fake_fpga.Loaded(bitstream_path=value['bitstream_path'],
                            topology=topology, **texts)
