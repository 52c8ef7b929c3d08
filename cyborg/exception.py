"""Domain exceptions of cyborg.

Each exception names a condition and carries a stable ``code`` (the HTTP
status the API answers with) so that one place, ``cyborg.api.hooks``, turns
any of them into Cyborg's error body. Nothing here knows about HTTP beyond
that number. Exceptions cross RPC: oslo.messaging re-raises them on the
caller's side when the module is in ``allowed_remote_exmods``.
"""

import http


class CyborgException(Exception):
    """Base of cyborg's exceptions; ``msg_fmt`` is filled from kwargs."""

    msg_fmt = 'An unknown exception occurred.'
    code = http.HTTPStatus.INTERNAL_SERVER_ERROR

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError):
                # A wrong format argument is a programming error; still show
                # the template rather than hide the original condition.
                message = self.msg_fmt
        self.message = str(message)
        super().__init__(self.message)

    def __str__(self):
        return self.message


class Invalid(CyborgException):
    msg_fmt = 'Invalid input: %(reason)s'
    code = http.HTTPStatus.BAD_REQUEST


class InvalidParameterValue(Invalid):
    msg_fmt = '%(err)s'


class InvalidUUID(Invalid):
    msg_fmt = 'Expected a UUID but received %(uuid)s.'


class NotAuthorized(CyborgException):
    msg_fmt = 'Not authorized.'
    code = http.HTTPStatus.FORBIDDEN


class PolicyNotAuthorized(NotAuthorized):
    msg_fmt = 'Policy does not allow %(action)s to be performed.'


class NotFound(CyborgException):
    msg_fmt = 'Resource could not be found.'
    code = http.HTTPStatus.NOT_FOUND


class ResourceNotFound(NotFound):
    msg_fmt = '%(resource)s not found with %(key)s=%(value)s'


class NotAcceptable(CyborgException):
    msg_fmt = 'Request not acceptable.'
    code = http.HTTPStatus.NOT_ACCEPTABLE


class Conflict(CyborgException):
    msg_fmt = 'Conflict.'
    code = http.HTTPStatus.CONFLICT


class DuplicateName(Conflict):
    msg_fmt = '%(resource)s with name %(name)s already exists.'


class ServiceUnavailable(CyborgException):
    msg_fmt = 'Service unavailable: %(reason)s'
    code = http.HTTPStatus.SERVICE_UNAVAILABLE


class DBSchemaOutOfDate(CyborgException):
    msg_fmt = ('The database schema is at %(current)s but this code needs '
               '%(expected)s; run "cyborg-dbsync upgrade".')


# Placement: raised by cyborg.clients.placement, kept here so they keep
# their class across RPC.
class PlacementError(CyborgException):
    msg_fmt = ('Placement answered %(status)s to %(method)s %(url)s: '
               '%(detail)s')


class PlacementUnavailable(ServiceUnavailable):
    msg_fmt = 'Placement cannot be reached: %(reason)s'


class PlacementNotConfigured(PlacementUnavailable):
    msg_fmt = ('Placement is not usable with the [placement] options '
               '(%(method)s %(url)s): %(detail)s')


class ResourceProviderNotFound(NotFound):
    msg_fmt = 'Resource provider %(uuid)s not found in Placement.'


class ResourceProviderConflict(Conflict):
    msg_fmt = ('Resource provider %(name)s could not be created: %(detail)s')


# Glance: raised by cyborg.clients.glance, kept here so they keep their
# class across RPC.
class GlanceError(CyborgException):
    msg_fmt = 'Glance answered %(status)s to %(action)s: %(detail)s'


class GlanceUnavailable(ServiceUnavailable):
    msg_fmt = 'Glance cannot be reached: %(reason)s'


class ImageNotFound(NotFound):
    msg_fmt = 'Image %(image_id)s not found in Glance.'


class ImageTooLarge(Invalid):
    msg_fmt = ('Image %(image_id)s has %(size)s bytes, more than the '
               '%(max_bytes)d allowed.')


class ImageDataInvalid(CyborgException):
    msg_fmt = 'The data of image %(image_id)s cannot be used: %(reason)s'


# The database: raised by cyborg.db.api when the server cannot be reached
# (down, restarting, or it cut the connection), here so that it keeps its
# class across RPC from the conductor to the API.
class DatabaseUnavailable(ServiceUnavailable):
    msg_fmt = 'The database is unavailable: %(reason)s'


# Quotas: raised by cyborg.conductor.quota, here so that they keep their
# class across RPC from the conductor to the API.
class QuotaExceeded(CyborgException):
    """A request would take a project past one of its limits.

    ``over`` is a list of (resource name, requested, used, limit).
    """

    msg_fmt = 'Quota exceeded for %(details)s'
    code = http.HTTPStatus.FORBIDDEN

    @classmethod
    def for_resources(cls, over):
        return cls(details='; '.join(
            '%s: requested %d, used %d, limit %d' % item for item in over))


class QuotaLimitsUnavailable(ServiceUnavailable):
    msg_fmt = 'The quota limits cannot be read: %(reason)s'
