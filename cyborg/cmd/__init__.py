"""Console scripts: cyborg-api, -conductor, -agent, -dbsync, -status, -aio.

Importing ``cyborg`` (which every script does first) has already selected
oslo.service's threading backend: cyborg never runs on eventlet.
"""
