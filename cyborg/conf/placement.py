"""Options of the [placement] group: how cyborg reaches the
Placement service (resource providers, inventories, traits).
"""

from cyborg.conf import _keystoneauth

group = _keystoneauth.make_group(
    'placement', 'Access to the Placement service (resource providers, inventories, traits)')


def register_opts(conf):
    _keystoneauth.register_client_group(conf, group, 'placement')


def list_opts():
    return _keystoneauth.list_client_opts(group, 'placement')
