"""os-acc: attach Cyborg accelerators to instances from a compute node.

A compute node's library (patterned after os-vif and os-brick). A compute
driver calls ``initialize()`` once at start of day, ``plug(instance_info,
selected_rp, flavor_extra_specs)`` before it builds an instance that needs
accelerators and ``unplug(instance_info)`` when the instance stops using
them. Each call is one RPC call to cyborg-conductor, with the
configuration ``configure()`` loads (implicitly at the first call).
``live_migrate`` and ``snapshot`` refuse the operations that cannot keep
an instance's accelerators (``Unsupported``). See
doc/source/admin/compute-node.rst for the arguments, results, errors and
what each instance operation calls.
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
