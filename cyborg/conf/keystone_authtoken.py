"""Options of the [keystone_authtoken] group, owned by keystonemiddleware.

cyborg-api validates tokens with keystonemiddleware's auth_token filter,
configured in this group exactly as every other OpenStack service does.
"""

from keystoneauth1 import loading as ks_loading
from keystonemiddleware import auth_token

GROUP = 'keystone_authtoken'


def register_opts(conf):
    for group, opts in auth_token.list_opts():
        conf.register_opts(opts, group=group)
    ks_loading.register_auth_conf_options(conf, GROUP)


def list_opts():
    return dict(auth_token.list_opts())
