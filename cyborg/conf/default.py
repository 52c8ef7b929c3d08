"""Options of the [DEFAULT] group: node identity, state, auth mode, heartbeats."""

import socket

from oslo_config import cfg

opts = [
    cfg.HostAddressOpt(
        'host', default=socket.gethostname(), sample_default='localhost',
        help='Name of this node, as Nova knows the compute host (its '
             'hypervisor hostname). The agent listens on the RPC topic of '
             'this name and reports devices under it.'),
    cfg.StrOpt(
        'state_path', default='/var/lib/cyborg',
        help='Top-level directory for the state cyborg keeps on disk.'),
    cfg.StrOpt(
        'auth_strategy', default='keystone', choices=[
            ('keystone', 'Validate tokens with keystonemiddleware.'),
            ('noauth', 'No authentication: every request acts as an admin '
                       'holding the service role. For the all-in-one and '
                       'tests only.')],
        help='How the API authenticates requests.'),
    cfg.IntOpt(
        'report_interval', default=10, min=1,
        help='Seconds between two service heartbeats.'),
    cfg.IntOpt(
        'service_down_time', default=60, min=1,
        help='A service whose last heartbeat is older than this many '
             'seconds is considered down.'),
]


def register_opts(conf):
    conf.register_opts(opts)


def list_opts():
    return {'DEFAULT': opts}
