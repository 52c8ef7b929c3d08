"""A page of the fleet in one read, for the fleet page (GET /v2/fleet).

No versioned object: the rows only render and never cross RPC. The query
is ``cyborg.db.queries.fleet``; the nesting, ``cyborg.api.views.fleet``.
"""

from cyborg.db.queries import fleet as fleet_queries


def read_fleet(context, project_id=None, history_project_id=None,
               history_per_device=0, host=None, limit=20, marker=None):
    """One page of ``limit`` hosts (after ``marker``; those whose name
    contains ``host`` when given) with their devices, deployables, attach
    handle counts, ARQs (of ``project_id`` only, when given) and the
    ``history_per_device`` newest history entries of each device (of
    ``history_project_id``'s ARQs only, when given), and the counts over
    the whole fleet, as read-only rows, in a fixed number of SQL queries:
    a ``cyborg.db.queries.fleet.FleetRows``."""
    return fleet_queries.fleet_rows(
        context, project_id=project_id,
        history_project_id=history_project_id,
        history_per_device=history_per_device, host=host, limit=limit,
        marker=marker)
