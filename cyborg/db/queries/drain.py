"""Where the drain of a device or a deployable stands, derived in SQL.

Only the moment an operator asked for the drain is stored
(``drain_since``); whether it is still ``draining`` or already
``drained`` is read from the attach handles at each read, in the same
statement as the row: ``draining`` while an attach handle of the device
(of the deployable, or of a deployable whose parent or root it is) is in
use, ``drained`` once none is, NULL when no drain was asked. So the
answer can never disagree with the handles, whatever the order in which
binds end and ARQs are deleted.
"""

import sqlalchemy as sa
from sqlalchemy import orm

from cyborg.common import vocabulary
from cyborg.db import models

DrainState = vocabulary.DrainState


def _state(drain_since, held):
    return sa.case(
        (drain_since.is_(None), sa.null()),
        (held, DrainState.DRAINING),
        else_=DrainState.DRAINED)


def device_drain_sql(device=models.Device):
    """The drain state of a row of ``device`` (the devices table or an
    alias of it): NULL, ``draining`` or ``drained``."""
    handle = orm.aliased(models.AttachHandle, name='drain_handle')
    part = orm.aliased(models.Deployable, name='drain_part')
    held = sa.exists().where(part.device_id == device.id,
                             handle.deployable_id == part.id,
                             handle.in_use.is_(True))
    return _state(device.drain_since, held)


def deployable_drain_sql(deployable=models.Deployable):
    """The drain state of a row of ``deployable`` (the deployables table
    or an alias of it): NULL, ``draining`` or ``drained``. The attach
    handles of the deployables below it count as its own."""
    handle = orm.aliased(models.AttachHandle, name='drain_handle')
    part = orm.aliased(models.Deployable, name='drain_part')
    held = sa.exists().where(
        handle.deployable_id == part.id,
        sa.or_(part.id == deployable.id, part.parent_id == deployable.id,
               part.root_id == deployable.id),
        handle.in_use.is_(True))
    return _state(deployable.drain_since, held)
