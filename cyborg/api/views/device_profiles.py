"""Device profiles as the API shows them (Cyborg API v2 field names).

Upstream renders a profile's timestamps as ``2020-03-09 11:26:05+00:00``
(a space between date and time) and gives it a ``self`` link only; so does
this view. A single profile is wrapped in ``device_profile`` by GET but
not by POST.
"""

import datetime

from cyborg.api import links
from cyborg.api import responses
from cyborg.api.views import listing

RESOURCE = 'device_profiles'


def timestamp(value):
    """A datetime as ``YYYY-MM-DD HH:MM:SS+00:00`` (UTC), or None."""
    if value is None or type(value) is str:
        # None, or a list row's text (``rows.rendered``).
        return value
    if value.tzinfo is None:
        # A row's: formatted as is, the fast path of every list.
        return value.isoformat(sep=' ', timespec='seconds') + '+00:00'
    return value.astimezone(datetime.timezone.utc).isoformat(
        sep=' ', timespec='seconds')


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


def collection(rows, query, params, base_url):
    """``{"device_profiles": [...]}`` with a ``next`` link when the page is
    full: ``rows`` of ``cyborg.objects.DeviceProfile.list_rows``, rendered
    as ``one`` renders a DeviceProfile.

    Their timestamps are the database's text already (``rows.rendered``,
    spaced) and go in as they are; their ``profile_json``, which only the
    DeviceProfile object writes (its groups field made every value a string
    or None), goes in unparsed (``responses.embedded``).
    """
    self_prefix = links.build_url(base_url, RESOURCE, '')
    embed = responses.embedder()
    return listing.collection(RESOURCE, [{
        'uuid': uuid,
        'name': name,
        'description': description,
        'groups': embed(profile_json),
        'created_at': created_at,
        'updated_at': updated_at,
        'links': [{'href': self_prefix + uuid, 'rel': 'self'}],
    } for _, uuid, name, description, profile_json, created_at, updated_at
        in listing.values_of(rows, _ROW_COLUMNS)], query, params, base_url)


# A list row's columns, in the order of its SELECT (``values_of`` then
# hands the rows over as they are).
_ROW_COLUMNS = ('id', 'uuid', 'name', 'description', 'profile_json',
                'created_at', 'updated_at')
