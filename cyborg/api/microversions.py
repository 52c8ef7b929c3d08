"""API microversions: the supported range, their history, header parsing and
the feature predicates controllers use instead of raw version numbers.

The Pecan hook that negotiates the version of each request and sets the
response headers is ``cyborg.api.hooks.MicroversionHook``.
"""

import re

import microversion_parse

from cyborg import exception

SERVICE_TYPE = 'accelerator'
HEADER = 'OpenStack-API-Version'
MIN_HEADER = 'OpenStack-API-Minimum-Version'
MAX_HEADER = 'OpenStack-API-Maximum-Version'

# History, one line per version:
#   2.0 - the base API
#   2.1 - the bind PATCH of an ARQ may carry /project_id (admin only)
#   2.2 - GET /v2/device_profiles/{x} accepts a profile name as well as a uuid
#   2.3 - devices carry status (enabled / maintaining); ARQs carry
#         state_reason (an addition to upstream's 2.3: why a bind failed)
#   2.4 - the FPGA model's queries: nested attributes shown under their parent
#         (``children``; nested in a deployable's attributes_list);
#         GET /v2/deployables/{uuid}/attributes[/{key}]; deployables carry
#         their own id, parent_uuid and root_uuid; GET /v2/deployables
#         takes ?programmed=true|false
#   2.5 - GET /v2/devices/{uuid}/history and /v2/deployables/{uuid}/history:
#         what was programmed, bound, unbound, enabled and disabled, newest
#         first
#   2.6 - fleet operations: devices and deployables carry health and drain
#         (?health= and ?drain= filter them); drain, undrain and
#         clear_health actions; ARQs listed by ?device_uuid= and
#         ?deployable_uuid=; POST /v2/bitstreams/{image_id}/prefetch
MIN_VERSION = microversion_parse.Version(2, 0)
MAX_VERSION = microversion_parse.Version(2, 6)

# A requested version is MAJOR.MINOR, both plain non-negative integers.
_VERSION_PATTERN = re.compile(r'^(\d+)\.(\d+)$')

_INVALID_MESSAGE = 'Invalid value for OpenStack-API-Version header'
_SUPPORTED_RANGE = 'The supported version range is: [%s, %s].' % (
    MIN_VERSION, MAX_VERSION)


def supports_project_id_in_bind(version):
    """Whether an ARQ bind PATCH may set /project_id (2.1)."""
    return version >= microversion_parse.Version(2, 1)


def supports_device_profile_by_name(version):
    """Whether GET /v2/device_profiles/{x} accepts a name (2.2)."""
    return version >= microversion_parse.Version(2, 2)


def supports_device_status(version):
    """Whether device objects carry ``status`` (2.3)."""
    return version >= microversion_parse.Version(2, 3)


def supports_arq_state_reason(version):
    """Whether ARQs carry ``state_reason`` (2.3; Nova's 2.0 sees upstream's
    fields only)."""
    return version >= microversion_parse.Version(2, 3)


def supports_nested_attributes(version):
    """Whether attributes show their nested attributes under them (2.4):
    ``children`` and ``parent_attribute_uuid`` on an attribute, only the
    top-level ones in its lists, objects in a deployable's
    ``attributes_list``."""
    return version >= microversion_parse.Version(2, 4)


def supports_deployable_attribute_paths(version):
    """Whether GET /v2/deployables/{uuid}/attributes[/{key}] exist (2.4)."""
    return version >= microversion_parse.Version(2, 4)


def supports_deployable_tree_links(version):
    """Whether deployables carry ``id``, ``parent_uuid`` and ``root_uuid``
    (2.4), so a client can walk the tree."""
    return version >= microversion_parse.Version(2, 4)


def supports_programmed_filter(version):
    """Whether GET /v2/deployables takes ``programmed`` (2.4)."""
    return version >= microversion_parse.Version(2, 4)


def supports_version_key(version):
    """Whether GET /v2 names the newest microversion in ``version`` (2.4)."""
    return version >= microversion_parse.Version(2, 4)


def supports_history(version):
    """Whether GET /v2/devices/{uuid}/history and
    /v2/deployables/{uuid}/history exist (2.5)."""
    return version >= microversion_parse.Version(2, 5)


def supports_fleet_operations(version):
    """Whether devices and deployables carry health and drain, take the
    drain, undrain and clear_health actions and the ``health`` and
    ``drain`` filters, ARQs the ``device_uuid`` and ``deployable_uuid``
    filters, and bitstreams can be prefetched (2.6)."""
    return version >= microversion_parse.Version(2, 6)


def requested_value(header_value):
    """The version string asked of this service by an OpenStack-API-Version value.

    Accepts ``accelerator X.Y``, the bare ``X.Y`` and comma-separated values
    naming several services. Returns None when the header names only other
    services (or is empty), meaning "use the default".

    :raises: exception.NotAcceptable when the value cannot be read.
    """
    if header_value is None:
        return None
    for item in header_value.split(','):
        words = item.split()
        if not words:
            continue
        if len(words) == 1:
            return words[0]
        if len(words) == 2:
            if words[0].lower() == SERVICE_TYPE:
                return words[1]
            continue
        raise exception.NotAcceptable(_INVALID_MESSAGE)
    return None


def parse(header_value):
    """The negotiated version for an OpenStack-API-Version header value.

    An absent header means the minimum version; ``latest`` the maximum.

    :raises: exception.NotAcceptable with the message clients show.
    """
    value = requested_value(header_value)
    if value is None:
        return MIN_VERSION
    if value.lower() == 'latest':
        return MAX_VERSION
    match = _VERSION_PATTERN.match(value)
    if match is None:
        raise exception.NotAcceptable(_INVALID_MESSAGE)
    version = microversion_parse.Version(int(match.group(1)),
                                         int(match.group(2)))
    if version.major != MAX_VERSION.major:
        raise exception.NotAcceptable(
            'Mutually exclusive versions requested. Version %s requested '
            'but not supported by this service. %s'
            % (version, _SUPPORTED_RANGE))
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise exception.NotAcceptable(
            'Version %s was requested but the minor version is not '
            'supported by this service. %s' % (version, _SUPPORTED_RANGE))
    return version


def response_headers(version):
    """The version headers of a /v2 response; ``version`` None for a 406."""
    headers = {
        MIN_HEADER: str(MIN_VERSION),
        MAX_HEADER: str(MAX_VERSION),
        'Vary': HEADER,
    }
    if version is not None:
        headers[HEADER] = '%s %s' % (SERVICE_TYPE, version)
    return headers
