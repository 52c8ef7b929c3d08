"""Options of the [glance] group: how cyborg reaches the
Glance image service (FPGA bitstreams).

The TLS options are also read under OpenStack Cyborg's older names
([glance] api_insecure, [ssl] ca_file, cert_file and key_file).
"""

from cyborg.conf import _keystoneauth
from cyborg.conf import upstream

group = _keystoneauth.make_group(
    'glance', 'Access to the Glance image service (FPGA bitstreams)')


def register_opts(conf):
    _keystoneauth.register_client_group(
        conf, group, 'image', deprecated_opts=upstream.GLANCE_DEPRECATED_OPTS)


def list_opts():
    return _keystoneauth.list_client_opts(
        group, 'image', deprecated_opts=upstream.GLANCE_DEPRECATED_OPTS)
