"""How cyborg-bitstream reaches Glance: openstack.config's auth options.

With an auth URL, a cloud or an auth type, the client takes a token and the
image endpoint of the catalog (or ``--os-image-url``); without them, or
with auth type ``none``, it sends no token, to the all-in-one's Glance by
default. The connection is made at the first call, so that a command checks
its input before the options are used.
"""

import glanceclient
from keystoneauth1 import loading as ks_loading

from cyborg.clients import glance as glance_client

# The Glance of the all-in-one (cyborg-aio), used when no auth is given.
AIO_IMAGE_URL = 'http://127.0.0.1:9292'


def _sends_token(args, region):
    """Whether the auth options ask for a token: not with auth type
    ``none``, nor when neither a cloud, an auth type nor an auth URL is
    given (on the command line, in OS_* or in clouds.yaml).

    ``region`` is openstack.config's unvalidated view of the options, where
    those given sit at the top level or under ``auth``.
    """
    config = region.config
    auth_type = config.get('auth_type')
    if auth_type == 'none':
        return False
    if args.os_cloud or auth_type not in (None, 'password'):
        return True
    return bool(config.get('auth_url')
                or (config.get('auth') or {}).get('auth_url'))


def connect(config, args):
    """``(glanceclient v2 client, where it goes)`` for the auth options.

    With auth type ``none``, or none of the auth options, no token is sent
    and the endpoint is ``--os-image-url``, the cloud's image endpoint
    override or the all-in-one's.

    :raises: ConfigException, keystoneauth ClientException when the auth
        options cannot be used
    """
    region = config.get_one(argparse=args, validate=False)
    endpoint = args.os_image_url or region.get_endpoint('image')
    if not _sends_token(args, region):
        endpoint = endpoint or AIO_IMAGE_URL
        # A session without an auth plugin: the OS_* variables that are
        # set (a project name, say) must not reach one.
        session = ks_loading.load_session_from_argparse_arguments(args)
        client = glanceclient.Client(glance_client.API_VERSION,
                                     session=session,
                                     endpoint_override=endpoint)
        return client, '%s without a token' % endpoint
    region = config.get_one(argparse=args)
    client = glanceclient.Client(
        glance_client.API_VERSION, session=region.get_session(),
        endpoint_override=endpoint, service_type='image',
        interface=region.get_interface('image'),
        region_name=region.get_region_name('image') or None)
    return client, endpoint or 'the image service of the catalog'


class Glance:
    """The GlanceClient of the auth options, connected at the first call,
    so that a command checks its input before the options are used."""

    def __init__(self, config, args):
        self.config = config
        self.args = args
        self.target = None
        self._images = None

    def __call__(self):
        if self._images is None:
            client, self.target = connect(self.config, self.args)
            self._images = glance_client.GlanceClient(None, client=client)
        return self._images
