"""Cyborg's Placement client: resource providers, their inventories and
traits, through a keystoneauth1 Adapter built from the [placement] group.

The keystoneauth session (connection pool, TLS settings) is created once per
process and shared by every client; each client has its own auth plugin.
"""

import http
import logging
import threading

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
import os_resource_classes
import os_traits

from cyborg import exception

LOG = logging.getLogger(__name__)

GROUP = 'placement'
SERVICE_TYPE = 'placement'

# 1.39 is openstack-placement 16's newest: nested providers (1.14), the
# provider body in POST answers (1.20), in_tree filters and consumer types.
MICROVERSION = '1.39'

# A PUT that loses the race for a provider's generation is tried this many
# times in all, reading the generation again before each new try.
GENERATION_ATTEMPTS = 4

# Placement's error code of a write made with a stale provider generation.
CONCURRENT_UPDATE = 'placement.concurrent_update'

# Answers of a proxy or a Placement that is down or restarting.
_UNAVAILABLE_STATUSES = (http.HTTPStatus.BAD_GATEWAY,
                         http.HTTPStatus.SERVICE_UNAVAILABLE,
                         http.HTTPStatus.GATEWAY_TIMEOUT)

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


def _error_code(response):
    """The first error's code from Placement's error body, or None."""
    try:
        return response.json()['errors'][0].get('code')
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None


class PlacementClient:
    """Resource-provider operations of cyborg against Placement."""

    def __init__(self, conf, adapter=None):
        """A client configured by the [placement] group of ``conf``.

        ``adapter``, a keystoneauth1 Adapter, replaces the one ``conf``
        would make (tests use it to reach Placement some other way).
        """
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

    def get_provider_tree(self, root_uuid, required_traits=()):
        """The providers of the tree of ``root_uuid``, root included.

        With ``required_traits``, only the providers that have all of them.
        """
        params = {'in_tree': root_uuid}
        if required_traits:
            params['required'] = ','.join(sorted(required_traits))
        url = '/resource_providers'
        response = self._request('GET', url, params=params)
        self._check(response, 'GET', url)
        return response.json()['resource_providers']

    def create_provider(self, uuid, name, parent_uuid=None):
        """Create a provider with this uuid and name; return it as Placement shows it.

        :raises: ResourceProviderConflict when the uuid or the name is taken
        """
        body = {'uuid': uuid, 'name': name}
        if parent_uuid is not None:
            body['parent_provider_uuid'] = parent_uuid
        url = '/resource_providers'
        response = self._request('POST', url, json=body)
        if response.status_code == http.HTTPStatus.CONFLICT:
            raise exception.ResourceProviderConflict(
                name=name, detail=_error_detail(response))
        self._check(response, 'POST', url)
        LOG.info('Created resource provider %s (%s)', name, uuid)
        return response.json()

    def delete_provider(self, rp_uuid):
        """Delete a provider; return False when it was already gone.

        :raises: ResourceProviderConflict when it still has allocations or
            child providers
        """
        url = '/resource_providers/%s' % rp_uuid
        response = self._request('DELETE', url)
        if response.status_code == http.HTTPStatus.NOT_FOUND:
            return False
        if response.status_code == http.HTTPStatus.CONFLICT:
            raise exception.ResourceProviderConflict(
                'Resource provider %s could not be deleted: %s'
                % (rp_uuid, _error_detail(response)),
                name=rp_uuid, detail=_error_detail(response))
        self._check(response, 'DELETE', url)
        LOG.info('Deleted resource provider %s', rp_uuid)
        return True

    def ensure_resource_classes(self, names):
        """Create the custom resource classes among ``names`` (idempotent).

        Standard classes (os-resource-classes) exist in every Placement and
        are not sent; one PUT per distinct custom name.
        """
        for name in sorted(set(names)):
            if os_resource_classes.is_custom(name):
                self._put_name('/resource_classes/%s' % name)

    def ensure_traits(self, names):
        """Create the custom traits among ``names`` (idempotent).

        Standard traits (os-traits) are not sent; one PUT per distinct
        custom name.
        """
        for name in sorted(set(names)):
            if os_traits.is_custom(name):
                self._put_name('/traits/%s' % name)

    def get_traits(self, rp_uuid):
        """The provider's generation and traits.

        :returns: ``{'resource_provider_generation': int, 'traits': [...]}``
        :raises: ResourceProviderNotFound
        """
        url = '/resource_providers/%s/traits' % rp_uuid
        response = self._request('GET', url)
        if response.status_code == http.HTTPStatus.NOT_FOUND:
            raise exception.ResourceProviderNotFound(uuid=rp_uuid)
        self._check(response, 'GET', url)
        return response.json()

    def set_inventories(self, rp_uuid, inventories, current=None):
        """Make ``inventories`` ({resource class: fields}) the provider's inventory.

        Classes absent from ``inventories`` are removed. For a class that
        stays, the fields Placement holds and ``inventories`` does not name
        (min_unit, step_size, allocation_ratio, ...) are kept. ``current``
        is what get_inventories returned, when the caller has read it
        already. Returns the provider's new generation.

        :raises: ResourceProviderNotFound; ResourceProviderConflict when the
            generation kept changing under every attempt
        """
        def body_for(current):
            held = current['inventories']
            records = {}
            for resource_class, fields in inventories.items():
                records[resource_class] = dict(held.get(resource_class, {}),
                                               **fields)
            return {'resource_provider_generation':
                    current['resource_provider_generation'],
                    'inventories': records}

        return self._put_with_generation(
            rp_uuid, '/resource_providers/%s/inventories' % rp_uuid,
            self.get_inventories, body_for, current)

    def set_traits(self, rp_uuid, traits, generation=None):
        """Make ``traits`` the provider's traits; return its new generation.

        ``generation`` is the provider's generation when the caller knows
        it; without it the traits are read first. The traits must exist.

        :raises: ResourceProviderNotFound; ResourceProviderConflict when the
            generation kept changing under every attempt
        """
        current = None
        if generation is not None:
            current = {'resource_provider_generation': generation}

        def body_for(current):
            return {'resource_provider_generation':
                    current['resource_provider_generation'],
                    'traits': sorted(set(traits))}

        return self._put_with_generation(
            rp_uuid, '/resource_providers/%s/traits' % rp_uuid,
            self.get_traits, body_for, current)

    def _put_with_generation(self, rp_uuid, url, read, body_for, current):
        """PUT ``body_for(current)``, reading ``current`` again after a lost race."""
        for attempt in range(1, GENERATION_ATTEMPTS + 1):
            if current is None:
                current = read(rp_uuid)
            response = self._request('PUT', url, json=body_for(current))
            if (response.status_code == http.HTTPStatus.CONFLICT
                    and _error_code(response) == CONCURRENT_UPDATE):
                LOG.debug('Generation of resource provider %s changed '
                          '(attempt %d of %d of PUT %s); reading it again',
                          rp_uuid, attempt, GENERATION_ATTEMPTS, url)
                current = None
                continue
            if response.status_code == http.HTTPStatus.NOT_FOUND:
                raise exception.ResourceProviderNotFound(uuid=rp_uuid)
            self._check(response, 'PUT', url)
            return response.json()['resource_provider_generation']
        detail = ('its generation changed during each of %d attempts of PUT '
                  '%s' % (GENERATION_ATTEMPTS, url))
        raise exception.ResourceProviderConflict(
            'Resource provider %s could not be updated: %s' % (rp_uuid,
                                                                detail),
            name=rp_uuid, detail=detail)

    def _put_name(self, url):
        # 201 when created, 204 when it existed already.
        response = self._request('PUT', url)
        self._check(response, 'PUT', url)

    def _request(self, method, url, **kwargs):
        try:
            response = self._adapter.request(url, method, raise_exc=False,
                                             **kwargs)
        except (ks_exceptions.ConnectionError,
                ks_exceptions.RequestTimeout) as error:
            raise exception.PlacementUnavailable(reason=str(error)) from error
        except ks_exceptions.ClientException as error:
            # No endpoint, no auth plugin, failed discovery: configuration.
            raise exception.PlacementNotConfigured(
                method=method, url=url, detail=str(error)) from error
        if response.status_code in _UNAVAILABLE_STATUSES:
            raise exception.PlacementUnavailable(
                reason='%s %s answered %s' % (method, url,
                                              response.status_code))
        return response

    @staticmethod
    def _check(response, method, url):
        if response.status_code >= 400:
            raise exception.PlacementError(status=response.status_code, method=method,
                                 url=url, detail=_error_detail(response))
