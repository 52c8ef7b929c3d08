"""An accelerator control plane for OpenStack, wire-compatible with Cyborg API v2.

Importing the package selects oslo.service's threading backend: importing
oslo_messaging would otherwise select eventlet, and any module (a test
module too) may import oslo_messaging before it imports cyborg.cmd.
"""

from oslo_service import backend as _oslo_service_backend

try:
    _oslo_service_backend.init_backend(
        _oslo_service_backend.BackendType.THREADING)
except _oslo_service_backend.exceptions.BackendAlreadySelected:
    # The embedding process chose first; cyborg.service refuses eventlet.
    pass
