"""Options of the [api] group: where cyborg-api listens and how it links."""

from oslo_config import cfg

group = cfg.OptGroup('api', title='Options for the cyborg-api service')

opts = [
    cfg.HostAddressOpt(
        'host_ip', default='0.0.0.0',
        help='The IP address on which cyborg-api listens.'),
    cfg.PortOpt(
        'port', default=6666,
        help='The TCP port on which cyborg-api listens.'),
    cfg.IntOpt(
        'api_workers', min=1,
        help='Number of request threads of cyborg-api. Defaults to 16 '
             'threads per CPU when unset.'),
    cfg.StrOpt(
        'public_endpoint',
        help='Public URL used to build links in responses (for example '
             '"https://cyborg.example.org/accelerator"). When unset, links '
             'are built from the request (scheme, host and mount prefix, '
             'honouring X-Forwarded-* headers).'),
    cfg.IntOpt(
        'max_limit', default=1000, min=1,
        help='The largest number of items a list request returns.'),
    cfg.BoolOpt(
        'enable_proxy_headers_parsing', default=True,
        help='Honour X-Forwarded-Proto and X-Forwarded-Host from a proxy '
             'in front of the API.'),
]


def register_opts(conf):
    conf.register_group(group)
    conf.register_opts(opts, group=group)


def list_opts():
    return {group: opts}
