"""Options of the [upgrade_levels] group: RPC version pins for a rolling
upgrade.

During an upgrade, services of two releases run side by side. A conductor
upgraded before the agents sets ``[upgrade_levels] agent`` to the agents'
RPC version, so that it never sends them a message they cannot read; an
agent or API upgraded before the conductors sets ``conductor``. Remove the
pins once every service runs the new release.
"""

from oslo_config import cfg

group = cfg.OptGroup('upgrade_levels',
                     title='RPC version pins for rolling upgrades')

_VERSION = r'^[0-9]+\.[0-9]+$'

opts = [
    cfg.StrOpt(
        'conductor', regex=_VERSION,
        help='The highest RPC version this service sends to '
             'cyborg-conductor (for example 1.2), while some conductors '
             'still run the previous release. Unset: this release\'s.'),
    cfg.StrOpt(
        'agent', regex=_VERSION,
        help='The highest RPC version cyborg-conductor sends to '
             'cyborg-agent (for example 1.2), while some agents still run '
             'the previous release. Calls that need a newer agent are '
             'refused (a bind asking for a bitstream fails with the '
             'reason) or skipped (releasing mediated devices, which an '
             'older agent never makes). Unset: this release\'s.'),
]


def register_opts(conf):
    conf.register_group(group)
    conf.register_opts(opts, group=group)


def list_opts():
    return {group: opts}
