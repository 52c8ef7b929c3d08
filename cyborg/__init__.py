"""An accelerator control plane for OpenStack, wire-compatible with Cyborg API v2.

Importing the package selects oslo.service's threading backend: importing
oslo_messaging would otherwise select eventlet, and any module (a test
module too) may import oslo_messaging before it imports cyborg.cmd.
"""

import warnings

# futurist imports eventlet whenever it is installed (oslo.service depends
# on it), which prints a deprecation warning on every command; cyborg never
# uses eventlet, so the warning only misleads operators.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')

from oslo_service import backend as _oslo_service_backend  # noqa: E402

try:
    _oslo_service_backend.init_backend(
        _oslo_service_backend.BackendType.THREADING)
except _oslo_service_backend.exceptions.BackendAlreadySelected:
    # The embedding process chose first; cyborg.service refuses eventlet.
    pass
