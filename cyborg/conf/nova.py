"""Options of the [nova] group: how cyborg reaches the
Nova compute API (server external events).
"""

from cyborg.conf import _keystoneauth

group = _keystoneauth.make_group(
    'nova', 'Access to the Nova compute API (server external events)')


def register_opts(conf):
    _keystoneauth.register_client_group(conf, group, 'compute')


def list_opts():
    return _keystoneauth.list_client_opts(group, 'compute')
