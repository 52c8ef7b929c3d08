"""Console scripts: cyborg-api, -conductor, -agent, -dbsync, -status, -aio
and cyborg-bitstream (bitstreams in Glance, for operators).

Importing ``cyborg`` (which every script does first) has already selected
oslo.service's threading backend: cyborg never runs on eventlet.
"""
