"""Register the keystoneauth session, auth and adapter options of one group.

The [placement], [glance], [nova] and [service_user] groups all describe how
cyborg reaches another service, so they share this one way of declaring it.
"""

import copy

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

VALID_INTERFACES = ['internal', 'public']


def _adapter_opts(service_type):
    """keystoneauth's adapter options with cyborg's defaults on the options.

    The defaults live on copies of the option objects rather than being set
    with ``conf.set_default``: ``ConfigOpts.reset()`` (which test fixtures
    call) forgets ``set_default`` values but keeps an option's own default.
    """
    opts = []
    for opt in ks_loading.get_adapter_conf_options(include_deprecated=False):
        if opt.dest in ('service_type', 'valid_interfaces'):
            opt = copy.deepcopy(opt)
            opt.default = (service_type if opt.dest == 'service_type'
                           else list(VALID_INTERFACES))
        opts.append(opt)
    return opts


def register_client_group(conf, group, service_type, adapter=True,
                          deprecated_opts=None):
    """Register the keystoneauth options of ``group`` on ``conf``.

    ``deprecated_opts`` ({option: [cfg.DeprecatedOpt]}) gives session
    options other names they are read under, as keystoneauth takes them.
    """
    conf.register_group(group)
    ks_loading.register_session_conf_options(
        conf, group.name, deprecated_opts=deprecated_opts)
    ks_loading.register_auth_conf_options(conf, group.name)
    if adapter:
        conf.register_opts(_adapter_opts(service_type), group=group.name)


def list_client_opts(group, service_type=None, adapter=True,
                     deprecated_opts=None):
    """All options of a client group, for the sample config generator."""
    opts = (ks_loading.get_session_conf_options(
                deprecated_opts=deprecated_opts)
            + ks_loading.get_auth_common_conf_options()
            + ks_loading.get_auth_plugin_conf_options('password'))
    if adapter:
        opts += _adapter_opts(service_type)
    unique = {}
    for opt in opts:
        unique.setdefault(opt.dest, opt)
    return {group: sorted(unique.values(), key=lambda opt: opt.dest)}


def make_group(name, title):
    return cfg.OptGroup(name, title=title)
