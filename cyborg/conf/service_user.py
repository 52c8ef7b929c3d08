"""Options of the [service_user] group: the service token sent with user tokens."""

from oslo_config import cfg

from cyborg.conf import _keystoneauth

group = _keystoneauth.make_group('service_user', 'Service token settings')

opts = [
    cfg.BoolOpt(
        'send_service_user_token', default=False,
        help='Send a service token along with the user token when cyborg '
             'calls another service on behalf of a user.'),
]


def register_opts(conf):
    _keystoneauth.register_client_group(conf, group, None, adapter=False)
    conf.register_opts(opts, group=group)


def list_opts():
    client_opts = _keystoneauth.list_client_opts(group, adapter=False)
    return {group: opts + client_opts[group]}
