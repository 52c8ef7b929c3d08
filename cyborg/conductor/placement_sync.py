"""Keep Placement in step with the database, one host at a time.

A host's deployables with accelerators become resource providers under the
compute-node provider named after the host (as Nova names it):
uuid = the deployable's rp_uuid, inventory in its ``rc`` class, traits
OWNER_CYBORG plus its ``trait*`` attributes. The database is the truth; a
sync that fails is repeated by the host's next report or device change.
Cyborg's providers that no deployable wants are deleted; other services'
providers are left alone (``_owned`` tells the two apart).

A deployable imported from OpenStack Cyborg (``cyborg.upstream``) keeps
the provider upstream made for it: the same uuid (its rp_uuid) and name
(its ``provider_name``), so Nova's allocations and the flavors' traits
stay valid; its upstream ``rc`` and ``trait*`` attributes were imported
with it, so the sync keeps that class and those traits and reconciles
the inventory. Providers upstream created under the host are cyborg's
too: upstream derives a provider's uuid from its name
(``is_upstream_provider``), which no other service does.
"""

import collections
import logging
import re
import threading
import uuid
import weakref

import os_resource_classes
import os_traits

from cyborg import exception
from cyborg.conductor import report_validation
from cyborg.db.queries import placement as placement_queries

LOG = logging.getLogger(__name__)

OWNER_TRAIT = os_traits.OWNER_CYBORG

_CUSTOM_NAME = re.compile(r'CUSTOM_[A-Z0-9_]+')

# Providers of new deployables get uuid5(PROVIDER_NAMESPACE, host/name).
PROVIDER_NAMESPACE = uuid.UUID('0b3e7c1a-5d94-4f2e-8a61-c2d7f9e4b805')

# What one deployable's provider should be; ``traits`` is a frozenset.
DesiredProvider = collections.namedtuple('DesiredProvider', [
    'uuid', 'name', 'resource_class', 'total', 'reserved', 'traits'])


class _HostMemory:
    """What syncs of one host through one Placement client found so far.

    ``written``: {rp_uuid: (generation, DesiredProvider)} last written or
    checked; a provider whose generation has not moved since needs no
    request. ``foreign``: {rp_uuid: generation} of the providers of the
    tree found not to be cyborg's; one whose generation has not moved since
    needs no listing of the marked providers. Any error forgets both.
    """

    def __init__(self):
        self.written = {}
        self.foreign = {}

    def clear(self):
        """Forget everything: the next sync reads Placement again."""
        self.written.clear()
        self.foreign.clear()


# Per Placement client, per host: its _HostMemory.
_memories = weakref.WeakKeyDictionary()
_memories_lock = threading.Lock()

# Syncs of one host run one at a time in this process (reports, device
# status and attribute changes arrive on different RPC threads).
_host_locks = collections.defaultdict(threading.Lock)
_host_locks_lock = threading.Lock()


def sync_host(context, placement, host):
    """Make ``host``'s provider tree in Placement match the database.

    Returns True when Placement is in step, False when Placement could not
    be reached or the [placement] options do not let the client reach it:
    that is logged once (WARNING, or ERROR for the configuration) and left
    to the host's next inventory report (or device change) to repeat,
    because the database side is already committed.

    :raises: PlacementError or ResourceProviderConflict when Placement
        refuses a request (after every other provider was handled)
    """
    with _lock_of(host):
        memory = _memory_of(placement, host)
        try:
            _sync(context, placement, host, memory)
        except exception.PlacementUnavailable as error:
            memory.clear()
            unavailable = error
        except Exception:
            memory.clear()
            raise
        else:
            return True
    # A Placement that is down or not configured yet is not the reporting
    # agent's fault: the database is committed, so the next report (or
    # device change) tries again. Logged outside the handler, where
    # oslo.log would append the exception's text a second time.
    log = (LOG.error
           if isinstance(unavailable, exception.PlacementNotConfigured)
           else LOG.warning)
    log('Resource providers of host %s not synced: %s. The next inventory '
        'report of %s (or a change of one of its devices) syncs them again.',
        host, unavailable, host)
    return False


def desired_providers(context, host):
    """The providers ``host`` should have, by uuid, read from the database."""
    desired = {}
    for source in placement_queries.provider_sources_of_host(context, host):
        resource_class = source.resource_class
        if resource_class is None:
            continue
        if not _is_valid_resource_class(resource_class):
            LOG.warning('Deployable %s of host %s has the invalid resource '
                        'class %r; it gets no resource provider',
                        source.deployable_name, host, resource_class)
            continue
        traits = {OWNER_TRAIT}
        for trait in source.traits:
            if _is_valid_trait(trait):
                traits.add(trait)
            else:
                LOG.warning('Deployable %s of host %s has the invalid trait '
                            '%r; it is left out of Placement',
                            source.deployable_name, host, trait)
        total = source.num_accelerators
        # A device in maintenance, unhealthy or drained takes no new bind:
        # its whole inventory is reserved; allocations stay as they are.
        reserved = 0 if source.offered else total
        desired[source.rp_uuid] = DesiredProvider(
            source.rp_uuid,
            source.provider_name or '%s_%s' % (host, source.deployable_name),
            resource_class, total, reserved, frozenset(traits))
    return desired


def _sync(context, placement, host, memory):
    desired = desired_providers(context, host)
    found = _compute_node_and_tree(placement, host, desired)
    if found is None:
        memory.clear()
        return
    compute_node_uuid, tree = found
    owned = _owned(placement, host, compute_node_uuid, tree, desired,
                   memory.foreign)
    written = memory.written

    errors = []
    # Deleting first frees the names of stale providers for new ones.
    _delete_stale(placement, owned, desired, written, errors)

    pending = []
    for want in desired.values():
        provider = owned.get(want.uuid)
        if (provider is not None
                and written.get(want.uuid) == (provider['generation'], want)):
            continue
        try:
            state = _current_state(placement, want, provider,
                                   compute_node_uuid)
        except exception.ResourceProviderNotFound as error:
            LOG.warning('%s; it is created again at the next sync', error)
            continue
        except (exception.PlacementError,
                exception.ResourceProviderConflict) as error:
            _record_error(errors, want, error)
            continue
        if state.inventories_match and state.traits_match:
            written[want.uuid] = (state.generation, want)
        else:
            pending.append(state)

    _write_pending(placement, pending, written, errors)
    for rp_uuid in set(written) - set(desired):
        del written[rp_uuid]
    if errors:
        raise errors[0]


def _compute_node_and_tree(placement, host, desired):
    """The compute node's uuid and the other providers of its tree, by uuid.

    None when the host has neither a compute node nor anything to offer.
    """
    compute_node = placement.get_provider_by_name(host)
    if compute_node is None:
        if not desired:
            return None
        # Nova has not registered this host (yet): the all-in-one alone.
        return placement.ensure_provider(host), {}
    compute_node_uuid = compute_node['uuid']
    tree = {provider['uuid']: provider
            for provider in placement.get_provider_tree(compute_node_uuid)
            if provider['uuid'] != compute_node_uuid}
    return compute_node_uuid, tree


def _owned(placement, host, compute_node_uuid, tree, desired, foreign):
    """Cyborg's providers among ``tree``, by uuid.

    They are those of its deployables (``desired``), those marked
    OWNER_CYBORG, those OpenStack Cyborg created (``is_upstream_provider``)
    and those a sync left half-written: creating a provider and marking it
    are two requests, and Placement may fail between them
    (``_is_half_written``). Other services' providers are left alone, even
    an empty one named like a deployable's (Nova's vGPU and PCI children
    between their creation and first write): their uuids are not derived.
    Deployables recorded before provider uuids were derived (random uuids)
    are covered only once marked.

    The providers marked OWNER_CYBORG are listed (one request) only when
    ``tree`` holds one that may be marked, is not desired and was not
    found foreign at its present generation by an earlier sync; so a host
    in step costs no request here. ``foreign`` is refilled.
    """
    unsure = [rp_uuid for rp_uuid, provider in tree.items()
              if rp_uuid not in desired and provider['generation'] != 0
              and foreign.get(rp_uuid) != provider['generation']]
    marked = set()
    if unsure:
        marked = {provider['uuid']
                  for provider in placement.get_provider_tree(
                      compute_node_uuid, required_traits=[OWNER_TRAIT])}
    owned = {}
    foreign.clear()
    for rp_uuid, provider in tree.items():
        if rp_uuid in desired or rp_uuid in marked:
            owned[rp_uuid] = provider
        elif is_upstream_provider(provider):
            LOG.info('Resource provider %s (%s) under the compute node of '
                     'host %s was created by OpenStack Cyborg (its uuid '
                     'derives from its name): taken as cyborg\'s',
                     provider['name'], rp_uuid, host)
            owned[rp_uuid] = provider
        elif _is_half_written(provider, host, compute_node_uuid):
            LOG.info('Resource provider %s (%s) under the compute node of '
                     'host %s has nothing written to it and the name of a '
                     'deployable: taken as one a failed sync created but '
                     'did not mark OWNER_CYBORG', provider['name'], rp_uuid,
                     host)
            owned[rp_uuid] = provider
        else:
            foreign[rp_uuid] = provider['generation']
    return owned


def _is_half_written(provider, host, compute_node_uuid):
    """Whether ``provider`` is as a sync leaves it between POST and traits.

    That is: a direct child of the compute node, at generation 0, named
    ``<host>_`` plus a valid deployable name
    (``report_validation.DEPLOYABLE_NAME``) and with the uuid a deployable
    of that name gets (``provider_uuid``: derived from host and name, which
    no other service's random uuid matches). Placement raises a provider's
    generation at each change of its inventory, traits, aggregates or
    allocations, so generation 0 means nothing was ever written to it; the
    tree listing shows it, with no request per provider.
    """
    prefix = '%s_' % host
    name = provider['name']
    return (provider['parent_provider_uuid'] == compute_node_uuid
            and provider['generation'] == 0
            and name.startswith(prefix)
            and report_validation.DEPLOYABLE_NAME.match(
                name[len(prefix):]) is not None
            and provider['uuid'] == provider_uuid(host, name[len(prefix):]))


def is_upstream_provider(provider):
    """Whether OpenStack Cyborg created ``provider`` (a dict of Placement's
    listing): its conductor gives a provider ``uuid3(NAMESPACE_DNS,
    name)``, a derivation by which no other service's uuid matches."""
    return provider['uuid'] == str(uuid.uuid3(uuid.NAMESPACE_DNS,
                                              provider['name']))


def provider_uuid(host, deployable_name):
    """The resource provider uuid a new deployable of ``host`` gets:
    derived from the host and name, so that a provider found in Placement
    can be proved cyborg's by its uuid alone (``_is_half_written``)."""
    return str(uuid.uuid5(PROVIDER_NAMESPACE,
                          '%s/%s' % (host, deployable_name)))


# A provider as Placement holds it, compared with what it should be.
_State = collections.namedtuple('_State', [
    'want', 'generation', 'inventories', 'inventories_match', 'traits',
    'traits_match'])


def _current_state(placement, want, provider, compute_node_uuid):
    """Read (or create) the provider of ``want`` and compare it."""
    if provider is None:
        created = _create(placement, want, compute_node_uuid)
        if created is not None:
            generation = created['generation']
            inventories = {'resource_provider_generation': generation,
                           'inventories': {}}
            return _State(want, generation, inventories, False, frozenset(),
                          False)
    inventories = placement.get_inventories(want.uuid)
    held_traits = placement.get_traits(want.uuid)
    traits = frozenset(held_traits['traits'])
    # The later read's generation: the one a write must name.
    return _State(want, held_traits['resource_provider_generation'],
                  inventories,
                  _inventories_match(inventories['inventories'], want),
                  traits, traits == want.traits)


def _write_pending(placement, pending, written, errors):
    """Write the providers that differ, custom classes and traits first."""
    # Classes and traits a provider already has exist: no need to PUT them.
    placement.ensure_resource_classes(
        state.want.resource_class for state in pending
        if state.want.resource_class not in state.inventories['inventories'])
    placement.ensure_traits(
        trait for state in pending
        for trait in state.want.traits - state.traits)
    for state in pending:
        try:
            written[state.want.uuid] = (_write(placement, state), state.want)
        except exception.ResourceProviderNotFound as error:
            written.pop(state.want.uuid, None)
            LOG.warning('%s; it is created again at the next sync', error)
        except (exception.PlacementError,
                exception.ResourceProviderConflict) as error:
            written.pop(state.want.uuid, None)
            _record_error(errors, state.want, error)


def _create(placement, want, compute_node_uuid):
    """Create the provider; None when it exists already (outside the tree)."""
    try:
        return placement.create_provider(want.uuid, want.name,
                                         parent_uuid=compute_node_uuid)
    except exception.ResourceProviderConflict:
        existing = placement.get_provider(want.uuid)
        if existing is None:
            raise  # the name belongs to another provider
        if existing['parent_provider_uuid'] != compute_node_uuid:
            LOG.warning('Resource provider %s (%s) is not a child of the '
                        'compute node provider %s; its inventory and traits '
                        'are kept in step where it is', want.name, want.uuid,
                        compute_node_uuid)
        return None


def _inventories_match(held, want):
    if set(held) != {want.resource_class}:
        return False
    record = held[want.resource_class]
    return ((record.get('total'), record.get('max_unit'),
             record.get('reserved'))
            == (want.total, want.total, want.reserved))


def _write(placement, state):
    """Write what differs (traits first: they mark the provider as ours)."""
    want = state.want
    generation = state.generation
    if not state.traits_match:
        generation = placement.set_traits(want.uuid, want.traits,
                                          generation=generation)
    if not state.inventories_match:
        inventories = state.inventories
        if not state.traits_match:
            inventories = dict(inventories,
                               resource_provider_generation=generation)
        generation = placement.set_inventories(
            want.uuid,
            {want.resource_class: {'total': want.total,
                                   'max_unit': want.total,
                                   'reserved': want.reserved}},
            current=inventories)
    LOG.debug('Resource provider %s (%s) set to %d %s, %d reserved, traits '
              '%s', want.name, want.uuid, want.total, want.resource_class,
              want.reserved, ', '.join(sorted(want.traits)))
    return generation


def _delete_stale(placement, owned, desired, written, errors):
    """Delete owned providers no deployable wants, children before parents."""
    stale = [provider for rp_uuid, provider in owned.items()
             if rp_uuid not in desired]
    for provider in sorted(stale, key=lambda item: -_depth(item, owned)):
        written.pop(provider['uuid'], None)
        try:
            placement.delete_provider(provider['uuid'])
        except exception.ResourceProviderConflict as error:
            LOG.warning('%s; deleting it is tried again at the next sync',
                        error)
        except exception.PlacementError as error:
            errors.append(error)
            LOG.error('Resource provider %s (%s) could not be deleted: %s',
                      provider['name'], provider['uuid'], error)


def _depth(provider, owned):
    depth = 0
    parent = provider.get('parent_provider_uuid')
    while parent in owned and depth < len(owned):
        depth += 1
        parent = owned[parent].get('parent_provider_uuid')
    return depth


def _record_error(errors, want, error):
    errors.append(error)
    LOG.error('Resource provider %s (%s) could not be synced: %s', want.name,
              want.uuid, error)


def _is_valid_resource_class(name):
    return (name in os_resource_classes.STANDARDS
            or _CUSTOM_NAME.fullmatch(name) is not None)


_standard_traits = None


def _is_valid_trait(name):
    global _standard_traits
    if _CUSTOM_NAME.fullmatch(name):
        return True
    if _standard_traits is None:
        _standard_traits = frozenset(os_traits.get_traits())
    return name in _standard_traits


def _lock_of(host):
    with _host_locks_lock:
        return _host_locks[host]


def _memory_of(placement, host):
    with _memories_lock:
        per_host = _memories.setdefault(placement, {})
        if host not in per_host:
            per_host[host] = _HostMemory()
        return per_host[host]
