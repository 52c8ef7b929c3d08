"""The response bodies of the API, declared: each resource's fields.

``cyborg.api.openapi`` puts these under the document's components; the
views (``cyborg.api.views``) render the same fields, which
``cyborg/tests/unit/api/test_openapi.py`` holds to these schemas with real
answers at each microversion. A field that appears from a microversion on
names it in ``x-openstack-microversion`` and is not required.
"""

from cyborg.common import vocabulary

MICROVERSION = 'x-openstack-microversion'


def field(kind, description=None, nullable=False, version=None, **schema):
    """The schema of one field: JSON type ``kind`` (or a schema)."""
    result = dict(kind) if isinstance(kind, dict) else {'type': kind}
    if nullable:
        result['type'] = [result['type'], 'null']
    result.update(schema)
    if description:
        result['description'] = description
    if version:
        result[MICROVERSION] = version
    return result


def _object(properties, description):
    required = [name for name, schema in properties.items()
                if MICROVERSION not in schema]
    return {'type': 'object', 'description': description,
            'properties': properties, 'required': required,
            'additionalProperties': False}


def _links(bookmark=True):
    rels = ['self', 'bookmark'] if bookmark else ['self']
    return field('array', items={
        'type': 'object',
        'properties': {'href': {'type': 'string', 'format': 'uri'},
                       'rel': {'enum': rels}},
        'required': ['href', 'rel'], 'additionalProperties': False},
        minItems=len(rels), maxItems=len(rels),
        description='``self`` (<base>/v2/<collection>/<uuid>)' +
                    (' and ``bookmark`` (<base>/<collection>/<uuid>)'
                     if bookmark else '') + '.')


def _timestamps(text_format):
    return {
        'created_at': field('string', 'When it was created, ' + text_format),
        'updated_at': field('string', 'When it last changed, ' + text_format
                            + '; null if never.', nullable=True),
    }


_ISO = 'ISO 8601 in UTC, whole seconds ("2026-03-09T11:26:05+00:00").'
_SPACED = 'upstream\'s form ("2026-03-09 11:26:05+00:00").'
UUID = field('string', format='uuid')
STRINGS = field('object', additionalProperties={'type': 'string'})

def _health_and_drain(what):
    """The fields of health and drain (from 2.6) of ``what`` (``device``
    or ``deployable``)."""
    return {
        'health': field({'enum': list(vocabulary.Health.ALL)},
                        'healthy; degraded (a transient fault: out of '
                        'Placement\'s offer until enough healthy reports) '
                        'or failed (out until an operator clears it).',
                        version='2.6'),
        'health_reason': field('string', 'Why the %s is not healthy, or '
                               'was not last.' % what, nullable=True,
                               version='2.6'),
        'health_since': field('string', 'Since when it has had this '
                              'health, ' + _ISO + ' Null if always '
                              'healthy.', nullable=True, version='2.6'),
        'drain': field({'type': 'string',
                        'enum': [*vocabulary.DrainState.ALL, None]},
                       'null, or draining (no new bind lands on it, an ARQ '
                       'still holds it) or drained (none holds it).',
                       nullable=True, version='2.6'),
        'drain_since': field('string', 'When the drain was asked, ' + _ISO
                             + ' Null when not drained.', nullable=True,
                             version='2.6'),
    }


DEVICE = _object(dict({
    'uuid': UUID,
    'type': field('string', 'GPU, FPGA, AICHIP, QAT, NIC or SSD.'),
    'vendor': field('string', 'The PCI vendor id, such as 0x8086 or 10de.'),
    'model': field('string'),
    'std_board_info': field('string', 'JSON text.', nullable=True),
    'vendor_board_info': field('string', nullable=True),
    'hostname': field('string'),
    'status': field({'enum': list(vocabulary.DeviceStatus.ALL)},
                    version='2.3'),
    'status_reason': field('string', 'Why the device is in maintenance.',
                           nullable=True, version='2.3'),
    **_health_and_drain('device'),
    'links': _links(),
}, **_timestamps(_ISO)), 'A physical accelerator card on one host.')

DEPLOYABLE = _object(dict({
    'id': field('integer', 'Its own integer id, which ``parent_id`` and '
                           '``root_id`` of others name.', version='2.4'),
    'uuid': UUID,
    'parent_id': field('integer', 'The integer id of the deployable above.',
                       nullable=True),
    'parent_uuid': field('string', 'The uuid of the deployable above.',
                         nullable=True, format='uuid', version='2.4'),
    'root_id': field('integer', 'The integer id of the tree\'s root.',
                     nullable=True),
    'root_uuid': field('string', 'The uuid of the tree\'s root.',
                       nullable=True, format='uuid', version='2.4'),
    'name': field('string'),
    'num_accelerators': field('integer', minimum=0),
    'device_id': field('integer', 'The integer id of the device.'),
    'attributes_list': field('string', 'JSON text: a list of one-key '
                                       'objects, ``[{"<key>": "<value>"}]``; '
                                       'from 2.4 an attribute with nested '
                                       'attributes has the object of theirs '
                                       'as its value.'),
    'rp_uuid': field('string', 'Its resource provider in Placement.',
                     nullable=True),
    'driver_name': field('string', nullable=True),
    'bitstream_id': field('string', 'The Glance image loaded last.',
                          nullable=True),
    **_health_and_drain('deployable'),
    'links': _links(),
}, **_timestamps(_ISO)), 'A programmable or assignable part of a device.')

ATTRIBUTE = _object(dict({
    'uuid': UUID,
    'deployable_id': field('integer', 'The integer id of the deployable.'),
    'key': field('string', '``rc`` (resource class), ``trait<N>`` (trait '
                           'names) or any other fact.'),
    'value': field('string', nullable=True),
    'parent_attribute_uuid': field('string', 'The attribute it is nested '
                                             'under; null at the top level.',
                                   nullable=True, format='uuid',
                                   version='2.4'),
    'children': field('array', 'The attributes nested directly under it, '
                               'shown the same way, in creation order.',
                      items={'$ref': '#/components/schemas/Attribute'},
                      version='2.4'),
    'links': _links(),
}, **_timestamps(_ISO)), 'A key and value of a deployable.')

DEVICE_PROFILE = _object(dict({
    'uuid': UUID,
    'name': field('string'),
    'description': field('string', nullable=True),
    'groups': field('array', items=STRINGS,
                    description='The request groups, each a map of '
                                'strings.'),
    'links': _links(bookmark=False),
}, **_timestamps(_SPACED)), 'A named request for accelerators, used by '
                            'Nova flavors.')

ARQ = _object(dict({
    'uuid': UUID,
    'state': field({'enum': list(vocabulary.ARQState.ALL)}),
    'device_profile_name': field('string'),
    'device_profile_group_id': field('integer', 'The index of its group '
                                                'in the profile.'),
    'hostname': field('string', nullable=True),
    'device_rp_uuid': field('string', nullable=True),
    'instance_uuid': field('string', nullable=True),
    'project_id': field('string', nullable=True),
    'attach_handle_type': field('string', '"" until bound; then PCI, MDEV '
                                          'or TEST_PCI.'),
    'attach_handle_uuid': field('string', nullable=True),
    'attach_handle_info': dict(STRINGS, description='{} until bound; then '
                               'the PCI address (bus, device, domain, '
                               'function) and more, all strings.'),
    'state_reason': field('string', 'Why its last bind failed; null '
                                    'otherwise.', nullable=True,
                          version='2.3'),
    'links': _links(),
}, **_timestamps(_ISO)), 'An accelerator request: one accelerator for '
                         'one instance.')

HISTORY_ENTRY = _object({
    'id': field('integer', 'The order of the entries; ``marker`` of the '
                           'next page.', minimum=1),
    'created_at': field('string', 'When it was recorded, ' + _ISO),
    'device_uuid': field('string', 'The device.', nullable=True),
    'deployable_uuid': field('string', 'The deployable; null for what '
                                       'concerns the whole device.',
                             nullable=True),
    'event': field('string', 'What was done: %s (more kinds may come).'
                   % ', '.join(vocabulary.HistoryEvent.ALL)),
    'outcome': field({'enum': list(vocabulary.HistoryOutcome.ALL)}),
    'reason': field('string', 'Why it failed; a disable\'s reason.',
                    nullable=True),
    'image_id': field('string', 'The Glance image of a program.',
                      nullable=True),
    'image_hash': field('string', 'Its os_hash_value, when Glance has one.',
                        nullable=True),
    'arq_uuid': field('string', 'The ARQ of a bind, unbind or delete.',
                      nullable=True),
    'instance_uuid': field('string', 'The instance of that ARQ.',
                           nullable=True),
    'arq_project_id': field('string', 'The project of that ARQ.',
                            nullable=True),
    'user_id': field('string', 'Who asked.', nullable=True),
    'project_id': field('string', 'The project of who asked.',
                        nullable=True),
    'request_id': field('string', 'The request that asked.', nullable=True),
    'agent': field('string', 'The host whose agent did it (programs, '
                             'binds).', nullable=True),
}, 'One change of a device or deployable (microversion 2.5).')

NEXT = field('string', 'The next page, when this one is full.',
             format='uri')


def collection(key, item_reference):
    """A list answer ``{key: [...], "next"?: url}``."""
    return {'type': 'object',
            'properties': {key: {'type': 'array',
                                 'items': {'$ref': item_reference}},
                           'next': NEXT},
            'required': [key], 'additionalProperties': False}


def wrapped(key, item_reference):
    """``{key: item}``."""
    return {'type': 'object', 'properties': {key: {'$ref': item_reference}},
            'required': [key], 'additionalProperties': False}


_VERSION = _object({
    'id': field('string', '"v2" in the root document, "v2.0" at /v2.'),
    'status': field({'const': 'CURRENT'}),
    'min_version': field('string'),
    'max_version': field('string'),
    'version': field('string', 'The newest microversion, as max_version '
                               'always in the root document, '
                               'at /v2 from microversion 2.4.',
                     version='2.4'),
    'links': field('array', items={
        'type': 'object',
        'properties': {'href': {'type': 'string', 'format': 'uri'},
                       'rel': {'const': 'self'}},
        'required': ['href', 'rel'], 'additionalProperties': False}),
}, 'API v2 and its microversion range.')
ROOT = _object({
    'name': field('string'),
    'description': field('string'),
    'versions': field('array', items={'$ref': '#/components/schemas/Version'}),
    'default_version': {'$ref': '#/components/schemas/Version'},
}, 'The API versions of the service.')

# The error body: one key whose string holds JSON, as upstream answers.
FAULT = _object({
    'faultcode': field({'enum': ['Client', 'Server']},
                       'Client for a 4xx, Server for a 5xx.'),
    'faultstring': field('string', 'What went wrong.'),
    'debuginfo': field('null'),
}, 'The fault inside ``error_message``.')
ERROR = _object({
    'error_message': field('string', contentMediaType='application/json',
                           contentSchema={'$ref': '#/components/schemas/'
                                                  'Fault'},
                           description='JSON text of the fault.'),
}, 'Cyborg\'s error body.')

# What a prefetch answers (2.6).
PREFETCH = _object({
    'image_id': UUID,
    'hosts': field('array', 'The hosts whose agents were asked to cache '
                   'the bitstream: those with an FPGA region it fits '
                   '(vendor, board, region, shell). Empty when it fits '
                   'none.', items={'type': 'string'}),
}, 'A prefetch sent: the agents download the bitstream into their '
   'caches after the answer.')

SCHEMAS = {
    'Device': DEVICE,
    'Deployable': DEPLOYABLE,
    'Attribute': ATTRIBUTE,
    'DeviceProfile': DEVICE_PROFILE,
    'ARQ': ARQ,
    'HistoryEntry': HISTORY_ENTRY,
    'Prefetch': PREFETCH,
    'Version': _VERSION,
    'VersionDocument': ROOT,
    'Fault': FAULT,
    'Error': ERROR,
}
