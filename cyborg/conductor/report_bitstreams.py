"""Which image a deployable holds, as its host's inventory report says.

A deployable's ``bitstream_id`` column records the Glance image it holds.
Programming records it (``cyborg.conductor.programming`` and
``bind_programming``); every inventory report then brings it in step with
the device, whichever way they differ, because the device is the truth:

* a deployable reporting a ``bitstream_id`` attribute holds that image, so
  it is recorded (a card that kept its bitstream while the database lost
  track of it, e.g. across a restart of the services);
* a deployable of a device that ``reports_bitstreams`` (its driver knows
  what each deployable holds) and reporting none holds none: the record
  is cleared (a card that came back blank, e.g. after a power cycle). Its
  function attributes, its function trait and the functions the bitstream
  made are gone from the report too, and go as every unreported part does
  (``inventory_report``), Placement following;
* any other deployable reporting none keeps its record: its driver cannot
  tell what it holds.

A deployable whose programming lock is held (a programming or a bind's
programming under way) keeps its record, as the database holds it when the
report writes (the programming may have recorded its outcome since the
report read the row): the programming records the outcome itself, and a
report collected before it ended would undo it.

Bound ARQs keep the rows they hold (``inventory_report``), not the record
of an image the device no longer holds: the record is cleared all the
same, so that a later bind asking for the image programs it again, and a
warning names the ARQs whose instances lost the function.
"""

import logging

from cyborg.db.queries import inventory

LOG = logging.getLogger(__name__)


def being_programmed(row, now):
    """Whether the programming lock of deployable ``row`` is held."""
    expires_at = row['programming_expires_at']
    return row['programming_owner'] is not None and \
        expires_at is not None and expires_at > now


def recorded(deployable, row, reports_bitstreams, now):
    """The ``bitstream_id`` to record for the reported ``deployable``
    (a ReportedDeployable) whose row is ``row`` (None: a new one)."""
    reported = deployable.bitstream_id
    if row is None:
        return reported
    if being_programmed(row, now):
        return row['bitstream_id']
    if reported is not None or reports_bitstreams:
        return reported
    return row['bitstream_id']


def log_changes(context, host, changes, deployables):
    """Say what the report changed: ``changes`` lists (deployable row,
    recorded image, image now recorded); ``deployables`` holds the host's
    rows as read, by id. One query, for the ARQs bound to the deployables
    that lost their image or to those below them, when any did."""
    if not changes:
        return
    cleared = {row['id'] for row, old, new in changes if new is None}
    holders = {}
    if cleared:
        below = _subtrees(cleared, deployables)
        for deployable_id, arqs in inventory.arqs_holding(
                context, set(below)).items():
            holders.setdefault(below[deployable_id], []).extend(arqs)
    for row, old, new in changes:
        if new is not None:
            LOG.info('Deployable %s (%s) of host %s holds image %s, as its '
                     'host reports (recorded: %s)', row['name'], row['uuid'],
                     host, new, old or 'none')
            continue
        arqs = holders.get(row['id'])
        if arqs:
            LOG.warning('Deployable %s (%s) of host %s no longer holds image '
                        '%s, its host reports, although accelerator '
                        'requests %s are bound to it: their instances lost '
                        'its function; the image is no longer recorded',
                        row['name'], row['uuid'], host, old,
                        ', '.join(sorted(arqs)))
        else:
            LOG.info('Deployable %s (%s) of host %s no longer holds image '
                     '%s, its host reports; the image is no longer recorded',
                     row['name'], row['uuid'], host, old)


def _subtrees(tops, deployables):
    """{deployable id: the id of ``tops`` it is, or is below}."""
    found = {}
    for deployable_id in deployables:
        ancestor = deployable_id
        while ancestor is not None and ancestor not in tops:
            ancestor = deployables.get(ancestor, {}).get('parent_id')
        if ancestor is not None:
            found[deployable_id] = ancestor
    for top in tops:
        found[top] = top
    return found
