"""The whole fleet in one read, for the fleet page (GET /v2/fleet).

No versioned object: the rows only render and never cross RPC. The query
is ``cyborg.db.queries.fleet``; the nesting, ``cyborg.api.views.fleet``.
"""

from cyborg.db.queries import fleet as fleet_queries


def read_fleet(context, project_id=None):
    """Devices, deployables, attach handle counts and ARQs (of
    ``project_id`` only, when given) as read-only rows, in a fixed number
    of SQL queries: a ``cyborg.db.queries.fleet.FleetRows``."""
    return fleet_queries.fleet_rows(context, project_id=project_id)
