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
    cfg.PortOpt(
        'fleet_page_port',
        help='A second TCP port, on host_ip, on which cyborg-api serves '
             'only the fleet page (/v2/fleet and its data) for browsers. '
             'Chromium and Firefox refuse to open ports 6665-6669 (port '
             '6666, the API\'s, among them), so a browser cannot open the '
             'page on the API\'s own port. Unset (the default of '
             'cyborg-api), no second port is opened; the all-in-one sets '
             'it to 6680. Behind a TLS proxy on port 443 the page opens at '
             'the proxy\'s address and this port is not needed.'),
    cfg.IntOpt(
        'api_workers', min=1,
        help='Number of request threads of cyborg-api. Defaults to 16 '
             'threads per CPU when unset.'),
    cfg.IntOpt(
        'backlog', default=4096, min=1,
        help='How many connections the listening socket holds before '
             'cyborg-api accepts them (the listen() backlog; the kernel '
             'caps it at net.core.somaxconn). A burst of clients beyond it '
             'sees connection errors.'),
    cfg.IntOpt(
        'max_queued_requests', default=1024, min=1,
        help='How many requests may wait for a free request thread. '
             'Beyond that, cyborg-api answers 503 Service Unavailable with '
             'a Retry-After header instead of queueing more.'),
    cfg.IntOpt(
        'retry_after', default=1, min=0,
        help='Seconds given in the Retry-After header of a 503: answered '
             'when max_queued_requests is reached, or when a service '
             'cyborg relies on (the database, Placement, Glance) cannot '
             'be reached.'),
    cfg.StrOpt(
        'public_endpoint',
        help='Public URL used to build links in responses (for example '
             '"https://cyborg.example.org/accelerator"). When unset, links '
             'are built from the request (scheme, host and mount prefix, '
             'honouring X-Forwarded-* headers).'),
    cfg.IntOpt(
        'max_limit', default=1000, min=1,
        help='The largest number of items a list request returns.'),
    cfg.IntOpt(
        'max_request_body_size', default=1024 * 1024, min=1024,
        help='The largest request body, in bytes, cyborg-api reads; a '
             'larger one is refused with 413.'),
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
