"""Checks of os-acc's arguments, and the accelerator request a flavor makes.

Every check raises ``TypeError`` for a value of the wrong type and
``ValueError`` for a wrong value, the message naming the argument and key
(``instance_info['uuid']``). A flavor's extra specs become either the name
of an existing device profile (``accel:device_profile``) or request groups
for an implicit one, checked with the rules of the device profiles API
(``cyborg.api.schemas.device_profiles.create_values``).
"""

import dataclasses
import re
import uuid

from cyborg import exception as cyborg_exception
from cyborg.api.schemas import device_profiles as device_profile_schemas

INSTANCE_KEYS = ('uuid', 'name', 'project_id', 'image_uuid')
SELECTED_RP_KEYS = ('uuid', 'name')
DEVICE_PROFILE_KEY = 'accel:device_profile'
BITSTREAM_ID_KEY = 'accel:bitstream_id'
FUNCTION_ID_KEY = 'accel:function_id'
ACCEL_PREFIX = 'accel:'
# The standard resource classes of accelerators; custom classes (CUSTOM_*)
# are taken too. Others (VCPU, MEMORY_MB...) are Nova's own.
ACCELERATOR_RESOURCE_CLASSES = ('FPGA', 'GPU', 'PGPU', 'VGPU')
CUSTOM_PREFIX = 'CUSTOM_'
# Nova's request groups: resources<suffix>:<class> and trait<suffix>:<name>,
# the unsuffixed group first.
_GROUP_KEY = re.compile(r'(resources|trait)([a-zA-Z0-9_-]{0,64}):(.+)')


class NoAccelerator(ValueError):
    """The flavor's extra specs ask for no accelerator."""


@dataclasses.dataclass(frozen=True)
class AcceleratorRequest:
    """What a flavor asks for: an existing profile, or implicit groups."""

    device_profile_name: str = None
    groups: list = None


def _uuid(where, value):
    """``value`` as a uuid in lower case; TypeError or ValueError naming
    ``where``."""
    if not isinstance(value, str):
        raise TypeError('%s must be a UUID string, not %s'
                        % (where, type(value).__name__))
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise ValueError('%s must be a UUID, not %r' % (where, value)) from None


def _mapping(name, value, known, required):
    if not isinstance(value, dict):
        raise TypeError('%s must be a dict, not %s'
                        % (name, type(value).__name__))
    unknown = sorted(str(key) for key in value if key not in known)
    if unknown:
        raise ValueError('%s has unknown key %s; it takes %s'
                         % (name, ', '.join(repr(key) for key in unknown),
                            ', '.join(known)))
    missing = [key for key in required if value.get(key) is None]
    if missing:
        raise ValueError("%s['%s'] is required" % (name, missing[0]))


def _optional_text(where, value):
    if value is not None and not isinstance(value, str):
        raise TypeError('%s must be a string, not %s'
                        % (where, type(value).__name__))
    return value


def instance_info(value):
    """``instance_info`` checked: a dict with ``uuid`` (lower case), and
    ``name``, ``project_id`` and ``image_uuid`` (None when not given)."""
    _mapping('instance_info', value, INSTANCE_KEYS, ('uuid',))
    image_uuid = value.get('image_uuid')
    return {
        'uuid': _uuid("instance_info['uuid']", value['uuid']),
        'name': _optional_text("instance_info['name']", value.get('name')),
        'project_id': _optional_text("instance_info['project_id']",
                                     value.get('project_id')),
        'image_uuid': None if image_uuid is None else _uuid(
            "instance_info['image_uuid']", image_uuid),
    }


def selected_rp(value):
    """The uuid (lower case) of ``selected_rp``, checked."""
    _mapping('selected_rp', value, SELECTED_RP_KEYS, ('uuid',))
    _optional_text("selected_rp['name']", value.get('name'))
    return _uuid("selected_rp['uuid']", value['uuid'])


def accelerator_request(extra_specs):
    """The AcceleratorRequest of a flavor's ``extra_specs``.

    ``accel:device_profile`` names an existing profile (the flavor's
    ``resources*`` and ``trait*`` keys are Nova's then). Otherwise each of
    Nova's request groups with an accelerator resource class (FPGA, GPU,
    PGPU, VGPU or CUSTOM_*) becomes a group of the implicit profile, with
    those classes and the group's custom traits (others are the compute
    node's: Placement checked them when Nova chose the host); an amount of
    0 asks for nothing. ``accel:bitstream_id`` or ``accel:function_id``
    go into the one accelerator group (refused with several).
    """
    if not isinstance(extra_specs, dict):
        raise TypeError('flavor_extra_specs must be a dict, not %s'
                        % type(extra_specs).__name__)
    for key, value in extra_specs.items():
        if not isinstance(key, str):
            raise TypeError('flavor_extra_specs keys must be strings, not %r'
                            % (key,))
        if not isinstance(value, str):
            raise TypeError("flavor_extra_specs['%s'] must be a string, not "
                            '%s' % (key, type(value).__name__))
    accel = {key: value for key, value in extra_specs.items()
             if key.startswith(ACCEL_PREFIX)}
    unknown = sorted(set(accel) - {DEVICE_PROFILE_KEY, BITSTREAM_ID_KEY,
                                   FUNCTION_ID_KEY})
    if unknown:
        raise ValueError("flavor_extra_specs has unknown key '%s'; os-acc "
                         'reads %s, %s and %s' % (
                             unknown[0], DEVICE_PROFILE_KEY,
                             BITSTREAM_ID_KEY, FUNCTION_ID_KEY))
    programming = {key: accel[key] for key in (BITSTREAM_ID_KEY,
                                               FUNCTION_ID_KEY)
                   if key in accel}
    if DEVICE_PROFILE_KEY in accel:
        return _named_profile(accel[DEVICE_PROFILE_KEY], programming)
    groups = _groups(extra_specs)
    if not groups:
        raise NoAccelerator(
            'flavor_extra_specs ask for no accelerator: give %s, or '
            'resources[<group>]:<class> with one of %s or a CUSTOM_ class'
            % (DEVICE_PROFILE_KEY, ', '.join(ACCELERATOR_RESOURCE_CLASSES)))
    if programming:
        if len(groups) > 1:
            raise ValueError(
                "flavor_extra_specs['%s'] applies to one accelerator group, "
                'but the flavor asks for %d; name a device profile with %s'
                % (sorted(programming)[0], len(groups), DEVICE_PROFILE_KEY))
        groups[0].update(programming)
    return AcceleratorRequest(groups=_checked_groups(groups))


def asks_for_accelerators(extra_specs):
    """Whether a flavor's ``extra_specs`` ask for accelerators (an
    ``accel:device_profile`` or an accelerator resource class).

    :raises: TypeError, ValueError as ``accelerator_request`` does for
        malformed extra specs
    """
    try:
        accelerator_request(extra_specs)
    except NoAccelerator:
        return False
    return True


def _named_profile(name, programming):
    if programming:
        raise ValueError(
            "flavor_extra_specs['%s'] cannot go with %s: the device profile "
            'says what to program' % (sorted(programming)[0],
                                      DEVICE_PROFILE_KEY))
    if not name.strip():
        raise ValueError("flavor_extra_specs['%s'] must name a device "
                         'profile' % DEVICE_PROFILE_KEY)
    return AcceleratorRequest(device_profile_name=name.strip())


def _is_accelerator_class(resource_class):
    return (resource_class in ACCELERATOR_RESOURCE_CLASSES
            or resource_class.startswith(CUSTOM_PREFIX))


def _groups(extra_specs):
    """The accelerator groups of Nova's request groups, unsuffixed first."""
    by_suffix = {}
    for key, value in extra_specs.items():
        match = _GROUP_KEY.fullmatch(key)
        if match is None:
            continue
        kind, suffix, name = match.groups()
        group = by_suffix.setdefault(suffix, {})
        if kind == 'trait':
            if name.strip().startswith(CUSTOM_PREFIX):
                group['trait:' + name.strip()] = value
            continue
        if not _is_accelerator_class(name):
            continue
        amount = value.strip()
        if not (amount.isascii() and amount.isdigit()):
            raise ValueError("flavor_extra_specs['%s'] must be an integer "
                             'amount, not %r' % (key, value))
        if int(amount):
            group['resources:' + name] = str(int(amount))
    return [by_suffix[suffix] for suffix in sorted(by_suffix)
            if any(key.startswith('resources:')
                   for key in by_suffix[suffix])]


def _checked_groups(groups):
    """``groups`` checked and normalized as the device profiles API does.

    :raises: ValueError with the API's message (naming group and key)
    """
    try:
        profiles = device_profile_schemas.create_values(
            [{'name': 'flavor', 'groups': groups}])
    except cyborg_exception.Invalid as error:
        raise ValueError('flavor_extra_specs: %s' % error) from None
    return profiles[0]['groups']
