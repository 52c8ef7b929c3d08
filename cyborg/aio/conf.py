"""The all-in-one's configuration: its [aio] group registered, and defaults.

The [aio] group is declared in ``cyborg.conf.aio``. The defaults make
``cyborg-aio`` run with no config file at all: SQLite in a state
directory, the in-process ``fake://`` transport, no Keystone, the fake
driver simulating the small fleet of ``fleet.yaml`` (next to this module;
the copy in the state directory once started), reporting every 10 s,
the embedded Placement and the embedded Glance (reached without a token:
``[glance] auth_type = none``), the fleet page on port 6680 and the
metrics of every service at the API's ``/metrics``. They are defaults (``set_default``), so any
value from a config file wins.
"""

import os

from oslo_log import log
from oslo_messaging import opts as messaging_opts

from cyborg.clients import placement as placement_client
from cyborg.conf import aio as aio_opts

STATE_DIR_ENVIRONMENT = aio_opts.STATE_DIR_ENVIRONMENT
# The fleet page's port: not on Chromium's or Firefox's list of restricted
# ports, as the API's 6666 is.
FLEET_PAGE_PORT = 6680
# The embedded Glance logs its start-up and each upload at INFO.
QUIET_LOGGERS = ['glance=WARN', 'glance_store=WARN']
# The simulated devices of the all-in-one: two FPGAs and a GPU. The
# all-in-one runs a copy in its state directory (``STATE_FLEET``, made at
# its first start): the fake driver reads it at every report, so a user can
# fault a card, or add one, by editing it while it runs.
FLEET_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          'fleet.yaml')
STATE_FLEET = '$aio.state_dir/fleet.yaml'
# Seconds between two inventory reports of the all-in-one's agent (60 in a
# deployment): a change of the simulated fleet shows within this.
REPORT_INTERVAL = 10


def default_state_dir(environ=None, cwd=None):
    """$CYBORG_AIO_STATE_DIR, else ``.aio`` in the current directory."""
    environ = os.environ if environ is None else environ
    configured = environ.get(STATE_DIR_ENVIRONMENT)
    if configured:
        return os.path.abspath(configured)
    return os.path.join(cwd or os.getcwd(), '.aio')


def _transport_url_opt():
    """oslo.messaging's own transport_url option, to register it early."""
    # Only this one: oslo.messaging changes other defaults of its own
    # (control_exchange), after which a copy would no longer register.
    for group_name, group_opts in messaging_opts.list_opts():
        for opt in group_opts:
            if group_name in (None, 'DEFAULT') and opt.name == 'transport_url':
                return opt
    raise LookupError('oslo.messaging lists no transport_url option')


def set_defaults(conf, environ=None, cwd=None):
    """Register what the all-in-one sets and give it its defaults.

    Call before parsing the command line and config files.
    """
    aio_opts.register_opts(conf)
    log.register_options(conf)
    # oslo.messaging and keystoneauth register these options only when they
    # first use them; a default needs them registered now.
    conf.register_opt(_transport_url_opt())
    placement_client.register_token_endpoint_opts(conf)

    conf.set_default('state_dir', default_state_dir(environ, cwd),
                     group='aio')
    conf.set_default('state_path', '$aio.state_dir')
    conf.set_default('connection', 'sqlite:///$aio.state_dir/cyborg.sqlite',
                     group='database')
    conf.set_default('transport_url', 'fake://')
    conf.set_default('auth_strategy', 'noauth')
    conf.set_default('host_ip', '127.0.0.1', group='api')
    conf.set_default('port', 6666, group='api')
    # Browsers refuse port 6666 (cyborg.api.fleet.port): the page has its own.
    conf.set_default('fleet_page_port', FLEET_PAGE_PORT, group='api')
    # GET /metrics on the API's port: the API's, conductor's and agent's.
    conf.set_default('enabled', True, group='metrics')
    conf.set_default('enabled_drivers', ['fake_driver'], group='agent')
    conf.set_default('fake_inventory', STATE_FLEET, group='agent')
    conf.set_default('report_interval', REPORT_INTERVAL, group='agent')
    conf.set_default('auth_type', 'admin_token', group='placement')
    conf.set_default('endpoint',
                     'http://$aio.placement_host:$aio.placement_port',
                     group='placement')
    conf.set_default('token', 'admin', group='placement')
    conf.set_default('auth_type', 'none', group='glance')
    conf.set_default('endpoint_override',
                     'http://$aio.glance_host:$aio.glance_port',
                     group='glance')
    conf.set_default('default_log_levels',
                     log.get_default_log_levels() + QUIET_LOGGERS)
