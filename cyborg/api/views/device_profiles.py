"""Device profiles as the API shows them (Cyborg API v2 field names).

Upstream renders a profile's timestamps as ``2020-03-09 11:26:05+00:00``
(a space between date and time) and gives it a ``self`` link only; so does
this view. A single profile is wrapped in ``device_profile`` by GET but
not by POST.
"""

import datetime

from cyborg.api import links
from cyborg.api.views import listing

RESOURCE = 'device_profiles'


def timestamp(value):
    """A datetime as ``YYYY-MM-DD HH:MM:SS+00:00`` (UTC), or None."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value.astimezone(datetime.timezone.utc).replace(
        microsecond=0).isoformat(sep=' ')


def one(device_profile, base_url):
    """The response dict of one device profile, not wrapped."""
    return {
        'uuid': device_profile.uuid,
        'name': device_profile.name,
        'description': device_profile.description,
        'groups': device_profile.groups,
        'created_at': timestamp(device_profile.created_at),
        'updated_at': timestamp(device_profile.updated_at),
        'links': links.make_links(base_url, RESOURCE, device_profile.uuid,
                                  bookmark=False),
    }


def wrapped(device_profile, base_url):
    """``{"device_profile": {...}}``: the answer of GET /v2/device_profiles/{x}."""
    return {'device_profile': one(device_profile, base_url)}


def created(device_profiles, base_url):
    """The answer of a POST: the profile itself when one was created.

    Several profiles created at once come back as ``{"device_profiles":
    [...]}``, the shape of a list.
    """
    if len(device_profiles) == 1:
        return one(device_profiles[0], base_url)
    return {RESOURCE: [one(profile, base_url) for profile in device_profiles]}


def collection(device_profiles, query, params, base_url):
    """``{"device_profiles": [...]}`` with a ``next`` link when the page is full."""
    return listing.collection(
        RESOURCE, [one(profile, base_url) for profile in device_profiles],
        query, params, base_url)
