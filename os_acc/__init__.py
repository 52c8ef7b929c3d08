"""os-acc: attach Cyborg accelerators to instances from a compute node.

A compute node's library, patterned after os-vif and os-brick: its calls
are those of ``os_acc.api`` (``configure``, ``initialize``, ``plug``,
``unplug``) and ``os_acc.operations`` (``live_migrate``, ``snapshot``).
doc/source/admin/compute-node.rst says what each takes, returns and
raises, and which instance operation calls which.
"""

from os_acc.api import configure
from os_acc.api import initialize
from os_acc.api import plug
from os_acc.api import unplug
from os_acc.exception import CyborgAgentUnavailable
from os_acc.exception import CyborgUnavailable
from os_acc.exception import DeviceProfileNotFound
from os_acc.exception import OsAccError
from os_acc.exception import PlugConflict
from os_acc.exception import PlugFailed
from os_acc.exception import Unsupported
from os_acc.operations import live_migrate
from os_acc.operations import snapshot

__all__ = [
    'CyborgAgentUnavailable', 'CyborgUnavailable', 'DeviceProfileNotFound',
    'OsAccError', 'PlugConflict', 'PlugFailed', 'Unsupported', 'configure',
    'initialize', 'live_migrate', 'plug', 'snapshot', 'unplug',
]
