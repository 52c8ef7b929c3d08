"""Options of the [aio] group and the all-in-one's defaults for the others.

The defaults make ``cyborg-aio`` run with no config file at all: SQLite in a
state directory, the in-process ``fake://`` transport, no Keystone, the fake
driver simulating the small fleet of ``fleet.yaml`` (next to this module)
and the embedded Placement. They are defaults (``set_default``), so
any value from a config file wins.
"""

import os

from oslo_config import cfg
from oslo_log import log
from oslo_messaging import opts as messaging_opts

from cyborg.clients import placement as placement_client

STATE_DIR_ENVIRONMENT = 'CYBORG_AIO_STATE_DIR'
# The simulated devices of the all-in-one: two FPGAs and a GPU.
FLEET_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          'fleet.yaml')

group = cfg.OptGroup(
    'aio', title='Options of the all-in-one launcher (cyborg-aio)')

opts = [
    cfg.StrOpt(
        'state_dir',
        sample_default='$CYBORG_AIO_STATE_DIR or <current directory>/.aio',
        help='Directory of the all-in-one\'s SQLite databases (cyborg and '
             'Placement). Defaults to $%s, else .aio in the current '
             'directory.' % STATE_DIR_ENVIRONMENT),
    cfg.BoolOpt(
        'embedded_placement', default=True,
        help='Run openstack-placement inside the all-in-one. When False, '
             'the [placement] options name an existing Placement.'),
    cfg.HostAddressOpt(
        'placement_host', default='127.0.0.1',
        help='Address the embedded Placement listens on.'),
    cfg.PortOpt(
        'placement_port', default=8778,
        help='Port the embedded Placement listens on.'),
]


def register_opts(conf):
    conf.register_group(group)
    conf.register_opts(opts, group=group)


def list_opts():
    return {group: opts}


def default_state_dir(environ=None, cwd=None):
    """$CYBORG_AIO_STATE_DIR, else ``.aio`` in the current directory."""
    environ = os.environ if environ is None else environ
    configured = environ.get(STATE_DIR_ENVIRONMENT)
    if configured:
        return os.path.abspath(configured)
    return os.path.join(cwd or os.getcwd(), '.aio')


def _transport_url_opt():
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
    register_opts(conf)
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
    conf.set_default('enabled_drivers', ['fake_driver'], group='agent')
    conf.set_default('fake_inventory', FLEET_PATH, group='agent')
    conf.set_default('auth_type', 'admin_token', group='placement')
    conf.set_default('endpoint',
                     'http://$aio.placement_host:$aio.placement_port',
                     group='placement')
    conf.set_default('token', 'admin', group='placement')
