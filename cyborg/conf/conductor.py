"""Options of the [conductor] group."""

from oslo_config import cfg

group = cfg.OptGroup('conductor', title='Options for the cyborg-conductor')

opts = [
    cfg.IntOpt(
        'workers', default=1, min=1,
        help='Number of conductor worker processes.'),
    cfg.IntOpt(
        'rpc_thread_pool_size', default=64, min=1,
        help='Threads serving RPC requests in each conductor process.'),
]


def register_opts(conf):
    conf.register_group(group)
    conf.register_opts(opts, group=group)


def list_opts():
    return {group: opts}
