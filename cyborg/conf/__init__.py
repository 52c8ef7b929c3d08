"""oslo.config options, one module per option group.

Importing this package registers the groups of ``MODULES`` on ``cfg.CONF``;
services read options from ``cyborg.conf.CONF``. Two modules are left out:
``drivers`` (each agent driver registers its own group when loaded) and
``aio`` (registered by the all-in-one only). Nothing here imports cyborg
code outside this package.
"""

from oslo_config import cfg

from cyborg.conf import agent
from cyborg.conf import api
from cyborg.conf import conductor
from cyborg.conf import database
from cyborg.conf import default
from cyborg.conf import glance
from cyborg.conf import health
from cyborg.conf import keystone_authtoken
from cyborg.conf import metrics
from cyborg.conf import nova
from cyborg.conf import placement
from cyborg.conf import quota
from cyborg.conf import service_user
from cyborg.conf import upgrade_levels
from cyborg.conf import upstream

CONF = cfg.CONF

MODULES = (default, api, database, agent, conductor, placement, glance, nova,
           keystone_authtoken, service_user, upgrade_levels, metrics, quota,
           health, upstream)

for _module in MODULES:
    _module.register_opts(CONF)
