"""Attribute workflows of the conductor: create and delete, kept in Placement.

An ``rc`` attribute names the resource class of the deployable's provider
(the newest one wins) and each ``trait*`` attribute one of its traits; a
change to either is followed by a sync of the host's providers. Deleting a
trait attribute takes the trait off that provider only.

The write takes the host's lock first (``host_locks.lock_reported``, the
lock an inventory report takes) in its transaction: the attribute writers
of one host take turns, so the refresh of the deployable's stored
``attributes_list`` that follows the write sees every attribute committed
before it, and a write here cannot deadlock with a report of the host. (A
deployable exists once a report of its host was applied, which made the
host's row.)
"""

import logging
import re

import os_resource_classes
import os_traits
from oslo_utils import uuidutils

from cyborg import exception
from cyborg import objects
from cyborg.conductor import placement_sync
from cyborg.db import api as db_api
from cyborg.db.queries import attributes as attribute_queries
from cyborg.db.queries import deployables as deployable_queries
from cyborg.db.queries import devices as device_queries
from cyborg.db.queries import host_locks
from cyborg.db.queries import placement as placement_queries

LOG = logging.getLogger(__name__)

KEY_LENGTH = 255
FIELDS = ('deployable_id', 'key', 'value')
_CUSTOM_NAME = re.compile(r'CUSTOM_[A-Z0-9_]+')


def create(context, placement, values):
    """Add an attribute to a deployable; return the Attribute.

    ``values`` holds ``deployable_id`` (the deployable's internal id),
    ``key`` and ``value``.

    :raises: Invalid for missing or malformed values (including an ``rc``
        or ``trait*`` value Placement would refuse); ResourceNotFound for an
        unknown deployable
    """
    values = _validated(values)
    row, host = _create_row(context, values)
    attribute = objects.Attribute.from_db(context, row)
    LOG.info('Attribute %s=%s added to deployable %d of host %s',
             attribute.key, attribute.value, attribute.deployable_id, host)
    if placement_queries.is_placement_key(attribute.key):
        placement_sync.sync_host(context, placement, host)
    return attribute


def delete(context, placement, attribute_uuid):
    """Delete an attribute (and its nested attributes).

    :raises: ResourceNotFound for an unknown attribute
    """
    key, host = _delete_row(context, attribute_uuid)
    LOG.info('Attribute %s (%s) of host %s deleted', attribute_uuid, key,
             host)
    if placement_queries.is_placement_key(key):
        placement_sync.sync_host(context, placement, host)


def _validated(values):
    if not isinstance(values, dict):
        raise exception.Invalid(reason='attribute values must be a dict')
    unknown = set(values) - set(FIELDS)
    if unknown:
        raise exception.Invalid(reason='unknown attribute fields: %s'
                                % ', '.join(sorted(unknown)))
    deployable_id = values.get('deployable_id')
    if isinstance(deployable_id, bool) or not isinstance(deployable_id, int):
        raise exception.Invalid(reason='deployable_id (an integer) is required')
    key = values.get('key')
    if not isinstance(key, str) or not key or len(key) > KEY_LENGTH:
        raise exception.Invalid(
            reason='key (a string of 1 to %d characters) is required'
            % KEY_LENGTH)
    value = values.get('value')
    if value is not None and not isinstance(value, str):
        raise exception.Invalid(reason='value must be a string')
    if key == placement_queries.RESOURCE_CLASS_KEY:
        if not (value in os_resource_classes.STANDARDS
                or _is_custom_name(value)):
            raise exception.Invalid(
                reason='rc must be a standard resource class or match '
                       'CUSTOM_[A-Z0-9_]+, not %r' % (value,))
    elif placement_queries.is_placement_key(key):
        if not (_is_custom_name(value) or value in os_traits.get_traits()):
            raise exception.Invalid(
                reason='%s must be a standard trait or match '
                       'CUSTOM_[A-Z0-9_]+, not %r' % (key, value))
    return {'deployable_id': deployable_id, 'key': key, 'value': value}


def _is_custom_name(value):
    return value is not None and _CUSTOM_NAME.fullmatch(value) is not None


def _lock_host(context, deployable_id):
    """Lock the host of the deployable (``lock_reported``) and return its
    name."""
    deployable, _attributes = deployable_queries.get_by_id(
        context, deployable_id)
    host = device_queries.get_by_id(context, deployable.device_id).hostname
    host_locks.lock_reported(context, host)
    return host


@db_api.writer
def _create_row(context, values):
    """Insert the attribute; return it and its deployable's host."""
    host = _lock_host(context, values['deployable_id'])
    row = attribute_queries.create(
        context, dict(values, uuid=uuidutils.generate_uuid()))
    return row, host


@db_api.writer
def _delete_row(context, attribute_uuid):
    """Delete the attribute; return its key and its deployable's host."""
    row = attribute_queries.get_by_uuid(context, attribute_uuid)
    key = row.key
    host = _lock_host(context, row.deployable_id)
    attribute_queries.destroy(context, attribute_uuid)
    return key, host
