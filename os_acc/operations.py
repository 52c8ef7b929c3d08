"""The instance operations not supported with accelerators.

A driver calls ``live_migrate`` before it starts a live migration and
``snapshot`` before it takes a snapshot; each raises ``Unsupported`` when
the flavor asks for accelerators and returns ``None`` when it does not.
Neither makes an RPC call or changes anything: the answer follows from
the flavor alone.
"""

import logging

from os_acc import arguments
from os_acc import exception

LOG = logging.getLogger(__name__)

LIVE_MIGRATION_REASON = (
    'accelerator state cannot move with a running instance; '
    'cold migrate it instead: unplug, then plug on the destination')
SNAPSHOT_REASON = (
    'an instance booted from the snapshot would expect its accelerators in '
    'the state they had when it was taken, which no card can give back; '
    'the instance keeps its accelerators')


def _refuse_with_accelerators(operation, reason, instance_info,
                              flavor_extra_specs):
    """Raise Unsupported for ``operation`` when the flavor asks for
    accelerators; check the arguments as plug does either way."""
    instance = arguments.instance_info(instance_info)
    if not arguments.asks_for_accelerators(flavor_extra_specs):
        return None
    error = exception.Unsupported(operation, instance['uuid'], reason)
    LOG.warning('os-acc refused the %s of instance %s (%s): %s',
                operation.lower(), instance['uuid'], instance['name'], reason)
    raise error


def live_migrate(instance_info, flavor_extra_specs):
    """Refuse the live migration of an instance whose flavor asks for
    accelerators; return None for one that asks for none.

    Call before starting a live migration. The instance keeps its
    accelerators on the source host.

    :raises: Unsupported; TypeError, ValueError (a malformed argument,
        naming the key)
    """
    return _refuse_with_accelerators('Live migration', LIVE_MIGRATION_REASON,
                                     instance_info, flavor_extra_specs)


def snapshot(instance_info, flavor_extra_specs):
    """Refuse a snapshot (an image to boot from) of an instance whose
    flavor asks for accelerators; return None for one that asks for none.

    Booting off such a snapshot is not supported; Cyborg is not
    told which image an instance boots from, so the refusal is here,
    before the snapshot exists.

    :raises: Unsupported; TypeError, ValueError (a malformed argument,
        naming the key)
    """
    return _refuse_with_accelerators('Snapshot', SNAPSHOT_REASON,
                                     instance_info, flavor_extra_specs)
