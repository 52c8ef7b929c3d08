"""Authentication middleware: keystonemiddleware with public paths, or noauth.

``cyborg.api.app`` chooses one of them from [DEFAULT] auth_strategy. Both
leave the caller's identity in the headers keystonemiddleware defines, which
``cyborg.api.hooks.ContextHook`` turns into a RequestContext.
"""

from keystonemiddleware import auth_token

from cyborg.api import fleet

# Paths (relative to the mount point) answered without a token: the version
# documents and the OpenAPI document (cyborg.api.schemas.routes marks the
# same routes public). /healthcheck is answered before authentication. The
# fleet page is too (fleet.is_page_request); its data is not.
PUBLIC_PATHS = frozenset(['', '/', '/v2', '/v2/', '/v2/openapi.json',
                          '/openapi.json'])

# Identity headers only an authentication middleware may set; a request
# that skips keystonemiddleware must not bring its own.
_IDENTITY_HEADER_PREFIXES = (
    'HTTP_X_IDENTITY_STATUS', 'HTTP_X_SERVICE_', 'HTTP_X_USER',
    'HTTP_X_PROJECT', 'HTTP_X_TENANT', 'HTTP_X_ROLE', 'HTTP_X_DOMAIN',
    'HTTP_X_SYSTEM_SCOPE', 'HTTP_X_IS_ADMIN_PROJECT', 'HTTP_X_AUTH_TOKEN',
    'HTTP_X_STORAGE_TOKEN')

# The identity of every noauth request.
NOAUTH_USER_ID = 'cyborg-noauth-admin'
NOAUTH_PROJECT_ID = '9ce6e1b6a3c94c07a0a1e61e6f2b3c6e'
NOAUTH_ROLES = 'admin,member,reader,service'
NOAUTH_SERVICE_ROLES = 'service'


class KeystoneAuth:
    """keystonemiddleware's auth_token, except for the public paths."""

    def __init__(self, application, conf):
        self._application = application
        self._protected = auth_token.AuthProtocol(
            application, {'oslo_config_config': conf})

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO', '') in PUBLIC_PATHS or \
                fleet.is_page_request(environ):
            for key in [key for key in environ
                        if key.startswith(_IDENTITY_HEADER_PREFIXES)]:
                del environ[key]
            return self._application(environ, start_response)
        return self._protected(environ, start_response)


class NoAuth:
    """Every request acts as an admin with a valid service token.

    Identity headers the caller sent win over the defaults, so a test can act
    as another user, project or role set (and drop the service token with
    ``X-Service-Identity-Status: Invalid``). For tests and the all-in-one only.
    """

    def __init__(self, application):
        self._application = application

    def __call__(self, environ, start_response):
        environ['HTTP_X_IDENTITY_STATUS'] = 'Confirmed'
        environ.setdefault('HTTP_X_USER_ID', NOAUTH_USER_ID)
        environ.setdefault('HTTP_X_PROJECT_ID', NOAUTH_PROJECT_ID)
        environ.setdefault('HTTP_X_ROLES', NOAUTH_ROLES)
        environ.setdefault('HTTP_X_SERVICE_IDENTITY_STATUS', 'Confirmed')
        environ.setdefault('HTTP_X_SERVICE_ROLES', NOAUTH_SERVICE_ROLES)
        return self._application(environ, start_response)
