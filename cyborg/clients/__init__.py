"""Clients of the services cyborg talks to (Placement, Glance, Nova).

Each module offers project-shaped methods (``ensure_provider``, not raw
URLs) over a keystoneauth1 Adapter loaded from that service's option group,
and turns the service's failures into cyborg exceptions.
"""
