"""The query and the body of GET /v2/fleet, declared
(``cyborg.api.views.fleet`` renders the body); ``cyborg.api.openapi`` adds
``SCHEMAS`` to the document's components.

The route takes no body. Its query pages the hosts: ``limit`` hosts a
page (``HOSTS_PER_PAGE`` by default), from the host after ``marker``
(the ``next_marker`` of the previous page), only those whose name
contains ``host`` when given.
"""

from cyborg.api.schemas import declarations
from cyborg.api.schemas import listing
from cyborg.api.schemas import resources
from cyborg.api.views import fleet as fleet_views
from cyborg.common import columns
from cyborg.common import vocabulary

HOSTS_PER_PAGE = 20
MAX_HOSTS_PER_PAGE = 500
_HOSTNAME = columns.of('Device', 'hostname')
QUERY = listing.Parameters({
    'host': declarations.String(
        min_length=1, column=_HOSTNAME,
        description='Only the hosts whose name contains this text.'),
    'limit': declarations.Integer(
        minimum=1, maximum=MAX_HOSTS_PER_PAGE, text=True,
        description='Hosts a page (default %d).' % HOSTS_PER_PAGE,
        messages=dict.fromkeys(
            ('type', 'minimum', 'maximum'),
            '{name} must be an integer from {minimum} to {maximum}, not '
            '{value!r}')),
    'marker': declarations.String(
        min_length=1, column=_HOSTNAME,
        description='The page begins after the host of this name (the '
                    '``next_marker`` of the previous page).'),
})


# Parameters of the page's own address (``?refresh=N``), which a client
# may pass on to the JSON: accepted and ignored.
PAGE_ONLY = ('refresh',)


def parse_query(params):
    """The validated query: ``{'host', 'limit', 'marker'}``.

    :raises: exception.InvalidParameterValue (400)
    """
    unknown = sorted(set(params) - set(QUERY) - set(PAGE_ONLY))
    if unknown:
        raise listing.invalid('Unknown query parameter %s'
                              % ', '.join(unknown))
    query = {'host': None, 'limit': HOSTS_PER_PAGE, 'marker': None}
    for name, declaration in QUERY.items():
        if name in params:
            query[name] = declaration.parse(
                name, listing.single(name, params[name]))
    return query

field = resources.field
_TEXT = field('string', nullable=True)


def _object(properties, description):
    return {'type': 'object', 'description': description,
            'properties': properties, 'required': sorted(properties),
            'additionalProperties': False}


def _condition(what):
    """Health and drain of a device or deployable (``what``), as the
    resources show them from 2.6 (the page is not versioned)."""
    return {name: {key: value for key, value in schema.items()
                   if key != resources.MICROVERSION}
            for name, schema in resources._health_and_drain(what).items()}


# The newest history entries of a device, as its history shows them.
_ENTRY = _object(
    {name: resources.HISTORY_ENTRY['properties'][name]
     for name in ('id', 'created_at', 'event', 'outcome', 'reason',
                  'deployable_uuid', 'image_id', 'arq_uuid',
                  'instance_uuid', 'user_id', 'project_id', 'request_id',
                  'agent')},
    'A history entry of the device (GET /v2/devices/{uuid}/history '
    'shows them all).')

_USAGE = _object({
    'type': field('string', 'The attach types of the handles (PCI, MDEV, '
                            'TEST_PCI...), comma-separated.'),
    'in_use': field('integer', minimum=0),
    'total': field('integer', minimum=0),
}, 'The deployable\'s attach handles: how many are in use, of how many.')

DEPLOYABLE = _object({
    'uuid': resources.UUID,
    'name': field('string'),
    'kind': field('string', 'What the deployable is: the card\'s root, an '
                            'FPGA region, a PF, a VF, a vGPU type, or '
                            'another part.', enum=list(fleet_views.KINDS)),
    'num_accelerators': field('integer', minimum=0),
    'resource_class': field('string', 'Its ``rc`` attribute.',
                            nullable=True),
    'rp_uuid': field('string', 'Its resource provider, if it has one.',
                     nullable=True),
    'bitstream_id': field('string', 'The Glance image programmed into it.',
                          nullable=True),
    'function_id': field('string', 'The function loaded (its '
                                   '``function_id`` attribute).',
                         nullable=True),
    'vgpu_type': _TEXT,
    'vgpu_type_name': _TEXT,
    'pci_address': _TEXT,
    'attach_handles': {'oneOf': [{'type': 'null'}, _USAGE]},
    'arqs': field('array', 'The ARQs holding its handles (BindStarted or '
                           'Bound).', items=resources.UUID),
    'children': field('array', 'The deployables right below it.',
                      items={'$ref': '#/components/schemas/FleetDeployable'}),
    **_condition('deployable'),
}, 'A deployable with the tree below it.')

_DEVICE = _object({
    'uuid': resources.UUID,
    'type': field('string'),
    'vendor': field('string'),
    'model': field('string'),
    'status': field('string', enum=list(vocabulary.DeviceStatus.ALL)),
    'status_reason': field('string', 'Why it is in maintenance.',
                           nullable=True),
    'deployables': field('array', 'Its deployable trees (usually one).',
                         items={'$ref':
                                '#/components/schemas/FleetDeployable'}),
    'history': field('array', 'Its newest history entries, newest first '
                              '(at most %d; a project\'s manager sees only '
                              'those of its own ARQs).'
                     % fleet_views.HISTORY_PER_DEVICE, items=_ENTRY),
    **_condition('device'),
}, 'A device and its deployables.')

_ARQ = _object({
    'uuid': resources.UUID,
    'state': field('string', enum=list(vocabulary.ARQState.ALL)),
    'state_reason': _TEXT,
    'instance_uuid': _TEXT,
    'hostname': _TEXT,
    'project_id': _TEXT,
    'device_profile_name': field('string'),
    'deployable_uuid': _TEXT,
    'deployable_name': _TEXT,
}, 'An ARQ, with the instance and deployable it is bound to.')

_COUNT = field('integer', minimum=0)


def _by_kind(values, description):
    counts = _object({value: _COUNT for value in values}, description)
    return _object({'devices': counts, 'deployables': counts}, description)


FLEET = _object({
    'summary': _object({
        'hosts': _COUNT,
        'devices': _COUNT,
        'maintaining_devices': _COUNT,
        'deployables': _COUNT,
        'attach_handles': _object({'in_use': _COUNT, 'total': _COUNT},
                                  'Every attach handle of the fleet.'),
        'arqs': _object({state: _COUNT for state in vocabulary.ARQState.ALL},
                        'How many ARQs are in each state.'),
        'health': _by_kind(vocabulary.Health.ALL,
                           'How many devices and deployables have each '
                           'health.'),
        'drain': _by_kind(vocabulary.DrainState.ALL,
                          'How many devices and deployables are draining '
                          'and drained.'),
    }, 'Counts over the whole fleet.'),
    'page': _object({
        'host': _TEXT,
        'limit': _COUNT,
        'marker': _TEXT,
        'hosts': _COUNT,
        'next_marker': field('string', nullable=True,
                             description='The marker of the next page; '
                                         'null on the last.'),
    }, 'Which hosts this page holds: the query it answers, how many hosts '
       'it has and where the next page begins.'),
    'hosts': field('array', 'One page of hosts by name, each with its '
                   'devices.',
                   items=_object({
                       'hostname': field('string'),
                       'devices': field('array', items=_DEVICE),
                   }, 'A host.')),
    'arqs_by_state': _object(
        {state: field('array', items=_ARQ) for state in vocabulary.ARQState.ALL},
        'The ARQs the caller may see (an admin: every project\'s) on the '
        'hosts of the page, and the newest not yet on a host, by state.'),
}, 'A page of the fleet: its hosts\' devices and deployable trees, their '
   'ARQs, and the counts over the whole fleet.')

SCHEMAS = {'Fleet': FLEET, 'FleetDeployable': DEPLOYABLE}
