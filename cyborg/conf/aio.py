"""Options of the [aio] group, read by the all-in-one launcher (cyborg-aio).

Only ``cyborg.aio.conf.set_defaults`` registers the group, on the
configuration of the all-in-one; the other services never see it. It is
declared here so that the sample configuration lists it.
"""

from oslo_config import cfg

# The environment variable naming the all-in-one's state directory.
STATE_DIR_ENVIRONMENT = 'CYBORG_AIO_STATE_DIR'

group = cfg.OptGroup(
    'aio', title='Options of the all-in-one launcher (cyborg-aio)')

opts = [
    cfg.StrOpt(
        'state_dir',
        sample_default='$CYBORG_AIO_STATE_DIR or <current directory>/.aio',
        help='Directory of the all-in-one\'s SQLite databases (cyborg, '
             'Placement and Glance) and of the embedded Glance\'s images '
             '(glance/images). Defaults to $%s, else .aio in the current '
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
    cfg.BoolOpt(
        'embedded_glance', default=True,
        help='Run Glance (the image service keeping FPGA bitstreams) inside '
             'the all-in-one, without Keystone. When False, the [glance] '
             'options name an existing Glance.'),
    cfg.HostAddressOpt(
        'glance_host', default='127.0.0.1',
        help='Address the embedded Glance listens on.'),
    cfg.PortOpt(
        'glance_port', default=9292,
        help='Port the embedded Glance listens on.'),
]


def register_opts(conf):
    """Register the [aio] group on ``conf`` (the all-in-one's only)."""
    conf.register_group(group)
    conf.register_opts(opts, group=group)


def list_opts():
    """The [aio] group and its options, for the sample configuration."""
    return {group: opts}
