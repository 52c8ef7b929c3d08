"""Console scripts: cyborg-api, -conductor, -agent, -dbsync, -status, -aio.

Importing this package selects oslo.service's threading backend before any
other module can touch oslo.service: cyborg never runs on eventlet.
"""

from oslo_service import backend

try:
    backend.init_backend(backend.BackendType.THREADING)
except backend.exceptions.BackendAlreadySelected:
    # A test process may import several commands; the first one chose.
    pass
