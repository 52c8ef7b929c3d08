"""Options of the [metrics] group: the Prometheus endpoints (off by default,
on in the all-in-one)."""

from oslo_config import cfg

group = cfg.OptGroup('metrics', title='Prometheus metrics of the services')

opts = [
    cfg.BoolOpt(
        'enabled', default=False,
        help='Expose Prometheus metrics: cyborg-api answers GET /metrics '
             '(without a token, like /healthcheck: restrict it by network), '
             'cyborg-conductor and cyborg-agent serve them over HTTP on '
             'conductor_port and agent_port. When off, nothing is measured '
             'and no port is opened. The all-in-one (cyborg-aio) turns it '
             'on by default and answers GET /metrics on its API port with '
             'the metrics of its API, conductor and agent together; it '
             'opens neither conductor_port nor agent_port.'),
    cfg.HostAddressOpt(
        'bind_host', default='0.0.0.0',
        help='The address on which cyborg-conductor and cyborg-agent serve '
             'their metrics.'),
    cfg.PortOpt(
        'conductor_port', default=9780,
        help='The TCP port on which cyborg-conductor serves its metrics.'),
    cfg.PortOpt(
        'agent_port', default=9781,
        help='The TCP port on which cyborg-agent serves its metrics.'),
]


def register_opts(conf):
    conf.register_group(group)
    conf.register_opts(opts, group=group)


def list_opts():
    return {group: opts}
