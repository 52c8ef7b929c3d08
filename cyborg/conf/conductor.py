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
    cfg.IntOpt(
        'bind_timeout', default=240, min=1, deprecated_group='DEFAULT',
        help='Seconds an accelerator request may stay in BindStarted. Past '
             'this the conductor sets it to BindFailed and tells Nova, '
             'whatever the agent is doing (an agent that died or never '
             'answered). It bounds the agent calls that prepare the attach '
             'handles (see prepare_call_timeout), which may include '
             'programming an FPGA. Keep it below '
             "Nova's [DEFAULT] arq_binding_timeout (300 by default), so "
             'that Nova hears of the failure before it gives up by itself. '
             "OpenStack Cyborg's [DEFAULT] bind_timeout is read as this "
             'option.'),
    cfg.IntOpt(
        'prepare_call_timeout', default=30, min=2,
        help='Seconds one call asking an agent to prepare the attach handles '
             'of a bind may take, when it programs no FPGA. A call lost in '
             'a message broker restart (queues are not durable) or whose '
             'answer was lost, a call the bus refused, and ARQs the agent '
             'was still preparing when it had to answer are asked for again '
             'while bind_timeout leaves time, instead of the bind failing at '
             'bind_timeout; the agent answers a repeated prepare from what '
             'it did already and waits for one still running. Shorter finds '
             'a lost call sooner; keep it well below bind_timeout. A call '
             'whose ARQs load a bitstream into an FPGA first waits for what '
             'is left of bind_timeout instead: programming may take minutes '
             'and cannot be told from a lost call, a second call would only '
             'wait for it, and an agent of the previous release asked again '
             'would load the bitstream twice.'),
    cfg.IntOpt(
        'bind_workers', default=8, min=1,
        deprecated_name='thread_pool_size', deprecated_group='DEFAULT',
        help='Threads of each conductor process that finish binds; each '
             'works on the ARQs of one bind request at a time. OpenStack '
             "Cyborg's [DEFAULT] thread_pool_size, the pool of its bind "
             'jobs, is read as this option.'),
    cfg.IntOpt(
        'bind_sweep_interval', default=10, min=1,
        help='Seconds between two sweeps of the recorded bind work: a '
             'conductor renews the leases of the binds it works on, takes '
             'over binds whose conductor stopped renewing for three '
             'intervals, fails binds older than bind_timeout and sends Nova '
             'the events still owed.'),
    cfg.IntOpt(
        'program_timeout', default=600, min=1,
        help='Seconds the conductor waits for an agent to download a '
             'bitstream and program an FPGA (PATCH /v2/deployables/{uuid}/'
             'program). A deployable stays locked for programming at most '
             'a minute longer: past it, a conductor that died while '
             'programming no longer blocks the next request or a bind.'),
    cfg.IntOpt(
        'report_resync_interval', default=600, min=0,
        help='Seconds an unchanged inventory report is skipped for. A '
             'report identical to the last one applied for its host, '
             'which left nothing to count (every device healthy, none '
             'degraded) or keep, costs one SQL statement and no Placement '
             'request while Placement was brought in step after that last '
             'one less than this long ago; past it the report is applied '
             'and Placement synced in full, which repairs drift (a '
             'provider changed or deleted in Placement by hand). 0 '
             'applies every report in full, as releases before this '
             'option did.'),
    cfg.IntOpt(
        'history_retention_days', default=90, min=0,
        help='Days the history of devices and deployables (GET '
             '/v2/devices/{uuid}/history and /v2/deployables/{uuid}/history) '
             'keeps an entry. Each conductor deletes older entries every '
             'history_prune_interval seconds, in batches of '
             'history_prune_batch_size, each its own short transaction. 0 '
             'keeps every entry forever.'),
    cfg.IntOpt(
        'history_prune_interval', default=3600, min=1,
        help='Seconds between two prunings of the history by a conductor.'),
    cfg.IntOpt(
        'history_prune_batch_size', default=1000, min=1,
        help='The most history entries one pruning transaction deletes.'),
]


def register_opts(conf):
    conf.register_group(group)
    conf.register_opts(opts, group=group)


def list_opts():
    return {group: opts}
