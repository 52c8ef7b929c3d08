"""Accelerator requests (ARQs) as the API shows them (Cyborg API v2 field names).

An unbound ARQ has ``attach_handle_type`` ``""``, ``attach_handle_uuid``
null and ``attach_handle_info`` ``{}``; a bound one has its attach handle's
type, uuid and info, an object of strings.
From microversion 2.3 an ARQ also carries ``state_reason``, why its last
bind failed (null otherwise): an addition to upstream's fields, left out
below 2.3 so that Nova's answers keep upstream's shape.
"""

from cyborg.api import links
from cyborg.api import microversions
from cyborg.api import responses
from cyborg.api.views import listing

RESOURCE = 'accelerator_requests'
COLLECTION_KEY = 'arqs'


def one(arq, version, base_url):
    """The response dict of one ARQ at ``version``, not wrapped."""
    info = arq.attach_handle_info or {}
    body = {
        'uuid': arq.uuid,
        'state': arq.state,
        'device_profile_name': arq.device_profile_name,
        'device_profile_group_id': arq.device_profile_group_id,
        'hostname': arq.hostname,
        'device_rp_uuid': arq.device_rp_uuid,
        'instance_uuid': arq.instance_uuid,
        'project_id': arq.project_id,
        'attach_handle_type': arq.attach_handle_type or '',
        'attach_handle_uuid': arq.attach_handle_uuid,
        'attach_handle_info': {str(key): '' if value is None else str(value)
                               for key, value in sorted(info.items())},
        'created_at': listing.timestamp(arq.created_at),
        'updated_at': listing.timestamp(arq.updated_at),
        'links': links.make_links(base_url, RESOURCE, arq.uuid),
    }
    if microversions.supports_arq_state_reason(version):
        body['state_reason'] = arq.state_reason
    return body


def created(arqs, version, base_url):
    """``{"arqs": [...]}``: the answer of a POST."""
    return {COLLECTION_KEY: [one(arq, version, base_url) for arq in arqs]}


# A list row's columns, in the order of its SELECT (``values_of`` then
# hands the rows over as they are).
_ROW_COLUMNS = ('uuid', 'state', 'device_profile_group_id', 'hostname',
                'device_rp_uuid', 'instance_uuid', 'project_id',
                'state_reason', 'created_at', 'updated_at',
                'device_profile_name', 'attach_handle_type',
                'attach_handle_uuid', 'attach_handle_info')


def _info_of(text):
    """The ``attach_handle_info`` a row's JSON text shows, as ``one`` shows
    an ARQ object's: the text as it is, which inventory reports store
    canonical (an object of strings, keys sorted:
    ``report_validation.canonical_json``)."""
    if not text:
        return {}
    return responses.embedded(text)


def collection(rows, version, query, params, base_url):
    """``{"arqs": [...]}`` with a ``next`` link when the page is full:
    ``rows`` of ``cyborg.objects.ARQ.list_rows``, rendered as ``one``
    renders an ARQ."""
    with_reason = microversions.supports_arq_state_reason(version)
    make_links = listing.link_maker(RESOURCE, base_url)
    # As _info_of, without its call per row.
    embed = responses.embedder()
    items = []
    for (uuid, state, device_profile_group_id, hostname, device_rp_uuid,
         instance_uuid, project_id, state_reason, created_at, updated_at,
         device_profile_name, attach_handle_type, attach_handle_uuid,
         attach_handle_info) in listing.values_of(rows, _ROW_COLUMNS):
        body = {
            'uuid': uuid,
            'state': state,
            'device_profile_name': device_profile_name,
            'device_profile_group_id': device_profile_group_id,
            'hostname': hostname,
            'device_rp_uuid': device_rp_uuid,
            'instance_uuid': instance_uuid,
            'project_id': project_id,
            'attach_handle_type': attach_handle_type or '',
            'attach_handle_uuid': attach_handle_uuid,
            'attach_handle_info': (embed(attach_handle_info)
                                   if attach_handle_info else {}),
            'created_at': created_at,
            'updated_at': updated_at,
            'links': make_links(uuid),
        }
        if with_reason:
            body['state_reason'] = state_reason
        items.append(body)
    body = listing.collection(RESOURCE, items, query, params, base_url)
    body[COLLECTION_KEY] = body.pop(RESOURCE)
    return body
