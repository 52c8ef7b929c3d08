"""The database side of Placement: what a host's resource providers should be.

One bounded read per host (two queries whatever the number of devices) that
``cyborg.conductor.placement_sync`` turns into providers, inventories and
traits.
"""

import collections

import sqlalchemy as sa
from sqlalchemy import orm

from cyborg.common import vocabulary
from cyborg.db import api as db_api
from cyborg.db import models

RESOURCE_CLASS_KEY = 'rc'
TRAIT_KEY_PREFIX = 'trait'

# One deployable that may be a resource provider, with the facts Placement
# needs; ``provider_name`` is the name of a provider adopted from OpenStack
# Cyborg (None: the provider is named after the deployable).
ProviderSource = collections.namedtuple('ProviderSource', [
    'deployable_id', 'deployable_name', 'num_accelerators', 'rp_uuid',
    'device_uuid', 'device_status', 'resource_class', 'traits', 'offered',
    'provider_name'], defaults=(None,))


def is_placement_key(key):
    """Whether an attribute with ``key`` shapes Placement (``rc`` or ``trait*``)."""
    return key == RESOURCE_CLASS_KEY or key.startswith(TRAIT_KEY_PREFIX)


def offered_sql(deployable=models.Deployable, device=models.Device):
    """Whether a new bind may land on a deployable, as an SQL truth value
    of its row and its device's: the device is enabled, and neither the
    device, nor the deployable, nor its parent or root deployable is
    unhealthy (degraded or failed) or drained (or draining). Placement is
    told the rest is reserved (``placement_sync``)."""
    above = orm.aliased(models.Deployable, name='above_deployable')
    return sa.and_(
        device.status == vocabulary.DeviceStatus.ENABLED,
        device.health == vocabulary.Health.HEALTHY,
        deployable.health == vocabulary.Health.HEALTHY,
        device.drain_since.is_(None),
        deployable.drain_since.is_(None),
        ~sa.exists().where(
            above.id.in_((deployable.parent_id, deployable.root_id)),
            sa.or_(above.health != vocabulary.Health.HEALTHY,
                   above.drain_since.is_not(None))))


def _placement_attributes(context, of_host):
    """``(resource classes, traits)`` by deployable id of the deployables
    ``of_host`` selects: the newest top-level ``rc`` value of each, and its
    top-level ``trait*`` values in creation order. One query."""
    deployable = models.Deployable
    device = models.Device
    attribute = models.Attribute
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
    return resource_classes, traits


@db_api.reader
def provider_sources_of_host(context, host):
    """The deployables of ``host`` that offer accelerators, in two queries.

    Each comes with its device's uuid and status, its resource class (the
    value of its newest top-level ``rc`` attribute, None without one), the
    values of its top-level ``trait*`` attributes, in creation order, and
    whether a new bind may land on it (``offered``, ``offered_sql``).
    Deployables without accelerators or without an rp_uuid are left out.
    """
    deployable = models.Deployable
    device = models.Device
    of_host = sa.and_(device.hostname == host,
                      deployable.num_accelerators > 0,
                      deployable.rp_uuid.is_not(None))

    deployables_query = sa.select(
        deployable.id, deployable.name, deployable.num_accelerators,
        deployable.rp_uuid, device.uuid, device.status,
        offered_sql().label('offered'), deployable.provider_name,
    ).join(device, deployable.device_id == device.id).where(
        of_host).order_by(deployable.id)
    found = context.session.execute(deployables_query).all()
    if not found:
        return []

    resource_classes, traits = _placement_attributes(context, of_host)
    return [ProviderSource(deployable_id, name, num_accelerators, rp_uuid,
                           device_uuid, device_status,
                           resource_classes.get(deployable_id),
                           tuple(traits[deployable_id]), bool(offered),
                           provider_name)
            for (deployable_id, name, num_accelerators, rp_uuid, device_uuid,
                 device_status, offered, provider_name) in found]
