"""Cyborg's Placement client: resource providers, and soon their inventories
and traits, through a keystoneauth1 Adapter built from the [placement] group.

The keystoneauth session (connection pool, TLS settings) is created once per
process and shared by every client; each client has its own auth plugin.
"""

import http
import logging
import threading

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading

from cyborg import conf as cyborg_conf
from cyborg import exception

LOG = logging.getLogger(__name__)

GROUP = 'placement'
SERVICE_TYPE = 'placement'

# 1.39 is openstack-placement 16's newest: nested providers (1.14), the
# provider body in POST answers (1.20), in_tree filters and consumer types.
MICROVERSION = '1.39'

_SESSION = None
_SESSION_LOCK = threading.Lock()


def register_token_endpoint_opts(conf):
    """Register the options of the ``admin_token`` auth plugin in [placement].

    keystoneauth registers a plugin's options only when it loads the plugin;
    whoever sets defaults or overrides for them (the all-in-one, the test
    fixture) registers them first.
    """
    conf.register_opts(
        ks_loading.get_auth_plugin_conf_options('admin_token'), group=GROUP)


def _shared_session(conf):
    global _SESSION
    with _SESSION_LOCK:
        if _SESSION is None:
            _SESSION = ks_loading.load_session_from_conf_options(conf, GROUP)
        return _SESSION


def _load_adapter(conf):
    auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
    return ks_loading.load_adapter_from_conf_options(
        conf, GROUP, session=_shared_session(conf), auth=auth,
        default_microversion=MICROVERSION,
        raise_exc=False)


def _error_detail(response):
    """The first error's detail from Placement's error body, else the text."""
    try:
        errors = response.json()['errors']
        return '; '.join(error.get('detail') or error.get('title', '')
                         for error in errors)
    except (ValueError, KeyError, TypeError):
        return response.text[:500]


class PlacementClient:
    """Resource-provider operations of cyborg against Placement."""

    def __init__(self, conf=None, adapter=None):
        conf = conf if conf is not None else cyborg_conf.CONF
        self._adapter = adapter if adapter is not None else _load_adapter(conf)

    def is_reachable(self):
        """Whether Placement answers its root (version) document."""
        try:
            response = self._adapter.get('/', raise_exc=False)
        except ks_exceptions.ClientException as error:
            LOG.debug('Placement is not reachable: %s', error)
            return False
        return response.status_code == http.HTTPStatus.OK

    def get_provider(self, rp_uuid):
        """The provider with ``rp_uuid`` as Placement shows it, or None."""
        response = self._request('GET', '/resource_providers/%s' % rp_uuid)
        if response.status_code == http.HTTPStatus.NOT_FOUND:
            return None
        self._check(response, 'GET', '/resource_providers/%s' % rp_uuid)
        return response.json()

    def get_provider_by_name(self, name):
        """The provider named ``name``, or None when there is none."""
        url = '/resource_providers'
        response = self._request('GET', url, params={'name': name})
        self._check(response, 'GET', url)
        providers = response.json()['resource_providers']
        return providers[0] if providers else None

    def ensure_provider(self, name, uuid=None, parent_uuid=None):
        """Return the uuid of the provider named ``name``, creating it if absent.

        A provider of that name that already exists is returned as it is,
        whatever its uuid or parent. Another process creating it at the same
        time is tolerated: Placement's 409 leads to reading it again.

        :raises: ResourceProviderConflict when the name is free but the
            uuid belongs to another provider.
        """
        provider = self.get_provider_by_name(name)
        if provider is not None:
            return provider['uuid']
        body = {'name': name}
        if uuid is not None:
            body['uuid'] = uuid
        if parent_uuid is not None:
            body['parent_provider_uuid'] = parent_uuid
        url = '/resource_providers'
        response = self._request('POST', url, json=body)
        if response.status_code == http.HTTPStatus.CONFLICT:
            provider = self.get_provider_by_name(name)
            if provider is None:
                raise exception.ResourceProviderConflict(
                    name=name, detail=_error_detail(response))
            LOG.debug('Resource provider %s was created concurrently', name)
            return provider['uuid']
        self._check(response, 'POST', url)
        created = response.json()
        LOG.info('Created resource provider %s (%s)', name, created['uuid'])
        return created['uuid']

    def get_inventories(self, rp_uuid):
        """The provider's generation and inventories, as Placement returns them.

        :returns: ``{'resource_provider_generation': int,
            'inventories': {resource_class: {...}}}``
        :raises: ResourceProviderNotFound
        """
        url = '/resource_providers/%s/inventories' % rp_uuid
        response = self._request('GET', url)
        if response.status_code == http.HTTPStatus.NOT_FOUND:
            raise exception.ResourceProviderNotFound(uuid=rp_uuid)
        self._check(response, 'GET', url)
        return response.json()

    def _request(self, method, url, **kwargs):
        try:
            return self._adapter.request(url, method, raise_exc=False,
                                         **kwargs)
        except ks_exceptions.ConnectionError as error:
            raise exception.PlacementUnavailable(reason=str(error)) from error
        except ks_exceptions.ClientException as error:
            # No endpoint, no auth plugin, failed discovery: configuration.
            raise exception.PlacementError(status='no answer', method=method, url=url,
                                 detail=str(error)) from error

    @staticmethod
    def _check(response, method, url):
        if response.status_code >= 400:
            raise exception.PlacementError(status=response.status_code, method=method,
                                 url=url, detail=_error_detail(response))
