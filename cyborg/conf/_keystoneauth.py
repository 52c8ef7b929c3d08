"""Register the keystoneauth session, auth and adapter options of one group.

The [placement], [glance], [nova] and [service_user] groups all describe how
cyborg reaches another service, so they share this one way of declaring it.
"""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg


def register_client_group(conf, group, service_type, adapter=True):
    """Register the keystoneauth options of ``group`` on ``conf``."""
    conf.register_group(group)
    ks_loading.register_session_conf_options(conf, group.name)
    ks_loading.register_auth_conf_options(conf, group.name)
    if adapter:
        ks_loading.register_adapter_conf_options(
            conf, group.name, include_deprecated=False)
        conf.set_default('service_type', service_type, group=group.name)
        conf.set_default('valid_interfaces', ['internal', 'public'],
                         group=group.name)


def list_client_opts(group, adapter=True):
    """All options of a client group, for the sample config generator."""
    opts = (ks_loading.get_session_conf_options()
            + ks_loading.get_auth_common_conf_options()
            + ks_loading.get_auth_plugin_conf_options('password'))
    if adapter:
        opts += ks_loading.get_adapter_conf_options(include_deprecated=False)
    unique = {}
    for opt in opts:
        unique.setdefault(opt.dest, opt)
    return {group: sorted(unique.values(), key=lambda opt: opt.dest)}


def make_group(name, title):
    return cfg.OptGroup(name, title=title)
