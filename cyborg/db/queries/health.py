"""The health columns of devices and deployables: one writer for both.

A change of health (``healthy``, ``degraded``, ``failed``, the words of
``cyborg.common.vocabulary.Health``) sets the reason, the time it started
(``health_since``) and restarts the count of healthy reports in a row
(``healthy_reports``, the recovery rule's). The same health again only
refreshes the reason, so ``health_since`` says since when the device has
been in that state. Each call is one UPDATE, in the caller's transaction
when it has one (a writer nested in another joins it).
"""

import datetime

import sqlalchemy as sa

from cyborg.db import api as db_api
from cyborg.db import models

_TABLES = {'device': models.Device.__table__,
           'deployable': models.Deployable.__table__}


def _cut(reason, table):
    """``reason`` as it fits ``table``'s health_reason (None stays None)."""
    if reason is None:
        return None
    limit = table.c.health_reason.type.length
    return reason if len(reason) <= limit else reason[:limit - 3] + '...'


def _now():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _set(context, table, row_id, health, reason):
    """Set the health of row ``row_id`` of ``table``; whether it changed."""
    reason = _cut(reason, table)
    changed = context.session.execute(
        sa.update(table).where(table.c.id == row_id,
                               table.c.health != health).values(
            health=health, health_reason=reason, health_since=_now(),
            healthy_reports=0)).rowcount
    if not changed:
        context.session.execute(
            sa.update(table).where(table.c.id == row_id,
                                   table.c.health == health).values(
                health_reason=reason))
    return bool(changed)


@db_api.writer
def set_device_health(context, device_id, health, reason=None):
    """Set the health of the device ``device_id`` (with ``reason``).

    Returns whether its health changed; the same health again keeps
    ``health_since`` and takes the new reason.
    """
    return _set(context, _TABLES['device'], device_id, health, reason)


@db_api.writer
def set_deployable_health(context, deployable_id, health, reason=None):
    """Set the health of the deployable ``deployable_id`` (with ``reason``).

    Returns whether its health changed; the same health again keeps
    ``health_since`` and takes the new reason.
    """
    return _set(context, _TABLES['deployable'], deployable_id, health,
                reason)
