"""Options of the [glance] group: how cyborg reaches the
Glance image service (FPGA bitstreams).
"""

from cyborg.conf import _keystoneauth

group = _keystoneauth.make_group(
    'glance', 'Access to the Glance image service (FPGA bitstreams)')


def register_opts(conf):
    _keystoneauth.register_client_group(conf, group, 'image')


def list_opts():
    return _keystoneauth.list_client_opts(group, 'image')
