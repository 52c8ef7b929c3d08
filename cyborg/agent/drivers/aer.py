"""A PCI device's health from its AER counters in sysfs.

Linux counts the PCIe Advanced Error Reporting errors of each device in
three files under ``bus/pci/devices/<address>``: ``aer_dev_fatal``,
``aer_dev_nonfatal`` and ``aer_dev_correctable``, one ``<NAME> <count>``
line per kind of error and a ``TOTAL_ERR_*`` line (kernels without it:
the lines are added up). The counters only grow until the device is
reset, so a driver keeps the counts of its previous discovery
(``AerTracker``) and reads a fault from their growth:

* a fatal count that grew: ``failed`` (the link or the device is
  unusable until it is reset: an operator clears it);
* a non-fatal count that grew: ``degraded`` (a transaction was lost; the
  conductor takes the device back after enough healthy reports);
* correctable errors were corrected by the hardware: not a fault.

The first discovery of a device (an agent start) only takes its counts as
they are: errors counted before it are not blamed on the present. A
device without the files (no AER, an old kernel) is healthy as far as
this can tell. A device that vanished is not listed by the driver at all,
so it is no longer reported and the conductor removes it (or keeps it,
unreported, while an ARQ holds it).
"""

import threading

from cyborg.common import vocabulary
from cyborg.agent.drivers import sysfs as sysfs_reader

FILES = {'fatal': 'aer_dev_fatal', 'nonfatal': 'aer_dev_nonfatal',
         'correctable': 'aer_dev_correctable'}


def parse_counts(text):
    """The count of a ``aer_dev_*`` file's ``text``: its ``TOTAL_ERR_*``
    line, else the sum of its lines; None when no line holds a count."""
    total = None
    summed = None
    for line in text.splitlines():
        words = line.split()
        if len(words) != 2 or not words[1].isdigit():
            continue
        if words[0].startswith('TOTAL_ERR'):
            total = int(words[1])
        else:
            summed = (summed or 0) + int(words[1])
    return total if total is not None else summed


def read_counts(sysfs, address):
    """``{kind: count or None}`` of the AER files of the PCI function at
    ``address`` (None: no such file, or none readable)."""
    counts = {}
    for kind, name in FILES.items():
        text = sysfs.read(sysfs_reader.PCI_DEVICES, address, name,
                          required=False)
        counts[kind] = None if text is None else parse_counts(text)
    return counts


def health_of(previous, current):
    """``(health, reason)`` from the growth of the counts ``previous`` to
    ``current`` (dicts of ``read_counts``)."""
    grown = {}
    for kind in ('fatal', 'nonfatal'):
        before, now = previous.get(kind), current.get(kind)
        if before is not None and now is not None and now > before:
            grown[kind] = (now - before, now)
    if 'fatal' in grown:
        new, total = grown['fatal']
        return (vocabulary.Health.FAILED,
                'PCIe AER: %d new fatal error(s) (%d in all)' % (new, total))
    if 'nonfatal' in grown:
        new, total = grown['nonfatal']
        return (vocabulary.Health.DEGRADED,
                'PCIe AER: %d new non-fatal error(s) (%d in all)'
                % (new, total))
    return vocabulary.Health.HEALTHY, None


class AerTracker:
    """The AER counts of each device at the previous discovery, and the
    health their growth tells."""

    def __init__(self, sysfs):
        self._sysfs = sysfs
        self._lock = threading.Lock()
        self._counts = {}

    def health(self, address):
        """``(health, reason)`` of the PCI function at ``address`` now,
        against its counts at the previous call (none: healthy)."""
        current = read_counts(self._sysfs, address)
        with self._lock:
            previous = self._counts.get(address, current)
            self._counts[address] = current
        return health_of(previous, current)

    def forget_others(self, addresses):
        """Forget the devices not in ``addresses`` (gone from the host): a
        device that comes back starts from its counts then."""
        with self._lock:
            for address in set(self._counts) - set(addresses):
                del self._counts[address]
