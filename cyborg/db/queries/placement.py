"""The database side of Placement: what a host's resource providers should be.

One bounded read per host (two queries whatever the number of devices) that
``cyborg.conductor.placement_sync`` turns into providers, inventories and
traits.
"""

import collections

import sqlalchemy as sa

from cyborg.db import api as db_api
from cyborg.db import models

RESOURCE_CLASS_KEY = 'rc'
TRAIT_KEY_PREFIX = 'trait'

# One deployable that may be a resource provider, with the facts Placement needs.
ProviderSource = collections.namedtuple('ProviderSource', [
    'deployable_id', 'deployable_name', 'num_accelerators', 'rp_uuid',
    'device_uuid', 'device_status', 'resource_class', 'traits'])


def is_placement_key(key):
    """Whether an attribute with ``key`` shapes Placement (``rc`` or ``trait*``)."""
    return key == RESOURCE_CLASS_KEY or key.startswith(TRAIT_KEY_PREFIX)


@db_api.reader
def provider_sources_of_host(context, host):
    """The deployables of ``host`` that offer accelerators, in two queries.

    Each comes with its device's uuid and status, its resource class (the
    value of its newest top-level ``rc`` attribute, None without one) and
    the values of its top-level ``trait*`` attributes, in creation order.
    Deployables without accelerators or without an rp_uuid are left out.
    """
    deployable = models.Deployable
    device = models.Device
    attribute = models.Attribute
    of_host = sa.and_(device.hostname == host,
                      deployable.num_accelerators > 0,
                      deployable.rp_uuid.is_not(None))

    deployables_query = sa.select(
        deployable.id, deployable.name, deployable.num_accelerators,
        deployable.rp_uuid, device.uuid, device.status,
    ).join(device, deployable.device_id == device.id).where(
        of_host).order_by(deployable.id)
    found = context.session.execute(deployables_query).all()
    if not found:
        return []

    attributes_query = sa.select(
        attribute.deployable_id, attribute.key, attribute.value,
    ).join(deployable, attribute.deployable_id == deployable.id).join(
        device, deployable.device_id == device.id,
    ).where(
        of_host,
        attribute.parent_attribute_id.is_(None),
        attribute.value.is_not(None),
        sa.or_(attribute.key == RESOURCE_CLASS_KEY,
               attribute.key.startswith(TRAIT_KEY_PREFIX)),
    ).order_by(attribute.id)
    resource_classes = {}
    traits = collections.defaultdict(list)
    for deployable_id, key, value in context.session.execute(
            attributes_query):
        if key == RESOURCE_CLASS_KEY:
            resource_classes[deployable_id] = value  # the newest wins
        else:
            traits[deployable_id].append(value)

    return [ProviderSource(deployable_id, name, num_accelerators, rp_uuid,
                           device_uuid, device_status,
                           resource_classes.get(deployable_id),
                           tuple(traits[deployable_id]))
            for (deployable_id, name, num_accelerators, rp_uuid, device_uuid,
                 device_status) in found]
