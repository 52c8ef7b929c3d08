"""/v2/device_profiles: list, show, create and delete device profiles.

Creating and deleting go through the conductor, each request in one
transaction: several profiles are created, or deleted, all or none.
"""

import pecan
from oslo_utils import uuidutils
from pecan import rest

from cyborg import exception
from cyborg import objects
from cyborg.api import links
from cyborg.api import microversions
from cyborg.api.schemas import body as body_schemas
from cyborg.api.schemas import device_profiles as device_profile_schemas
from cyborg.api.views import device_profiles as device_profile_views
from cyborg.policies import device_profile as device_profile_policies

NAME_NEEDS_VERSION = ('Request not acceptable. The minimal required API '
                      'version should be 2.2')


def _get_by_uuid_or_name(context, version, ref):
    """The profile ``ref`` names: a uuid, or from 2.2 a name too.

    :raises: exception.NotAcceptable (406) for a name below 2.2;
        exception.ResourceNotFound (404)
    """
    by_name = microversions.supports_device_profile_by_name(version)
    if not uuidutils.is_uuid_like(ref):
        if not by_name:
            raise exception.NotAcceptable(NAME_NEEDS_VERSION)
        return objects.DeviceProfile.get_by_name(context, ref)
    try:
        return objects.DeviceProfile.get_by_uuid(context, ref)
    except exception.ResourceNotFound as not_found:
        if not by_name:
            raise
        missing = not_found
    # From 2.2 a name that looks like a uuid is a name too.
    try:
        return objects.DeviceProfile.get_by_name(context, ref)
    except exception.ResourceNotFound:
        raise missing from None


class DeviceProfilesController(rest.RestController):
    """GET, POST, DELETE /v2/device_profiles; GET, DELETE /v2/device_profiles/{x}."""

    @pecan.expose('json')
    def get_all(self, **params):
        """Profiles, optionally only those named in ``name`` (comma-separated)."""
        request = pecan.request
        request.context.can(device_profile_policies.LIST)
        query = device_profile_schemas.list_query(params, request.max_limit)
        # Plain rows, not objects: the list only renders them.
        device_profiles = objects.DeviceProfile.list_rows(
            request.context, filters=query.filters, plain=True,
            **query.paging())
        return device_profile_views.collection(device_profiles, query, params,
                                               request.base_url)

    @pecan.expose('json')
    def get_one(self, uuid_or_name):
        """One profile, wrapped in ``device_profile``; by name from 2.2."""
        request = pecan.request
        request.context.can(device_profile_policies.SHOW)
        device_profile = _get_by_uuid_or_name(request.context,
                                              request.version, uuid_or_name)
        return device_profile_views.wrapped(device_profile, request.base_url)

    @pecan.expose('json')
    def post(self):
        """Create the profiles of the body's list, all or none; 201.

        One profile comes back not wrapped, with its URL in Location.
        """
        request = pecan.request
        request.context.can(device_profile_policies.CREATE)
        profiles = device_profile_schemas.create_values(
            body_schemas.json_body(request))
        created = request.conductor.create_device_profiles(request.context,
                                                           profiles)
        pecan.response.status = 201
        if len(created) == 1:
            pecan.response.location = links.build_url(
                request.base_url, device_profile_views.RESOURCE,
                created[0].uuid)
        return device_profile_views.created(created, request.base_url)

    @pecan.expose(content_type='application/json')
    def delete(self, uuid_or_name=None, **params):
        """Delete profiles by uuid or name, or ``?value=n1,n2``, all or none; 204."""
        request = pecan.request
        request.context.can(device_profile_policies.DELETE)
        refs = device_profile_schemas.delete_refs(uuid_or_name, params)
        request.conductor.delete_device_profiles(request.context, refs)
        pecan.response.status = 204
        return ''
