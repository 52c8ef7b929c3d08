"""The option list read by oslo-config-generator (namespace ``cyborg``)."""

from oslo_db import options as db_options
from oslo_log import log
from oslo_middleware import cors
from oslo_policy import opts as policy_opts

from cyborg import conf
from cyborg.conf import aio
from cyborg.conf import drivers


# Groups documented with the rest but not registered by ``cyborg.conf``:
# the [aio] group, read by cyborg-aio only, and the groups of the agent's
# drivers, each registered when the agent loads its driver.
EXTRA_MODULES = (aio, drivers)

# Groups whose options a library owns; the generator lists them under the
# library's own namespace (oslo.db, keystonemiddleware.auth_token).
LIBRARY_OWNED = (conf.database, conf.keystone_authtoken)


def list_opts():
    """Every group and option cyborg owns, as (group, [opts]) pairs."""
    merged = {}
    for module in conf.MODULES + EXTRA_MODULES:
        if module in LIBRARY_OWNED:
            continue
        for group, opts in module.list_opts().items():
            name = getattr(group, 'name', group)
            merged.setdefault(name, [])
            known = {opt.dest for opt in merged[name]}
            merged[name].extend(o for o in opts if o.dest not in known)
    return sorted(merged.items())


def set_defaults():
    """Cyborg's defaults for options owned by libraries."""
    db_options.set_defaults(conf.CONF, connection=conf.database.DEFAULT_CONNECTION)
    policy_opts.set_defaults(conf.CONF, policy_file='policy.yaml')
    log.set_defaults(default_log_levels=log.get_default_log_levels() + [
        'stevedore=INFO', 'keystoneauth=INFO', 'cheroot=WARN'])
    cors.set_defaults(allow_headers=[
        'X-Auth-Token', 'X-OpenStack-Request-ID', 'OpenStack-API-Version'],
        expose_headers=['X-OpenStack-Request-ID', 'OpenStack-API-Version',
                        'OpenStack-API-Minimum-Version',
                        'OpenStack-API-Maximum-Version'])
