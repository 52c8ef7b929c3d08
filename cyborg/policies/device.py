"""Policy rules of /v2/devices."""

from oslo_policy import policy

from cyborg.policies import base

LIST = 'cyborg:device:get_all'
SHOW = 'cyborg:device:get_one'
DISABLE = 'cyborg:device:disable'
ENABLE = 'cyborg:device:enable'
HISTORY = 'cyborg:device:history'
CLEAR_HEALTH = 'cyborg:device:clear_health'
DRAIN = 'cyborg:device:drain'
UNDRAIN = 'cyborg:device:undrain'

rules = [
    policy.DocumentedRuleDefault(
        name=LIST, check_str=base.MANAGER_OR_ADMIN,
        description='List devices, optionally filtered by type, vendor or '
                    'host.',
        operations=[{'path': '/v2/devices', 'method': 'GET'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(LIST, base.LEGACY_ADMIN)),
    policy.DocumentedRuleDefault(
        name=SHOW, check_str=base.MANAGER_OR_ADMIN,
        description='Show one device.',
        operations=[{'path': '/v2/devices/{device_uuid}', 'method': 'GET'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(SHOW, base.LEGACY_ADMIN)),
    policy.DocumentedRuleDefault(
        name=DISABLE, check_str=base.ADMIN,
        description='Put a device in maintenance: its accelerators are '
                    'reserved in Placement.',
        operations=[{'path': '/v2/devices/{device_uuid}/disable',
                     'method': 'POST'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(DISABLE, base.LEGACY_ADMIN)),
    policy.DocumentedRuleDefault(
        name=ENABLE, check_str=base.ADMIN,
        description='Take a device out of maintenance.',
        operations=[{'path': '/v2/devices/{device_uuid}/enable',
                     'method': 'POST'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(ENABLE, base.LEGACY_ADMIN)),
    policy.DocumentedRuleDefault(
        name=HISTORY, check_str=base.HISTORY_READER,
        description='Read the history of a device (microversion 2.5): '
                    'admins and the service role every entry, a project\'s '
                    'readers and members those of its own ARQs only.',
        operations=[{'path': '/v2/devices/{device_uuid}/history',
                     'method': 'GET'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(HISTORY,
                                         base.LEGACY_ADMIN_OR_OWNER)),
    policy.DocumentedRuleDefault(
        name=DRAIN, check_str=base.ADMIN,
        description='Drain a device (microversion 2.6): no new bind lands '
                    'on it, its bound ARQs keep working.',
        operations=[{'path': '/v2/devices/{device_uuid}/drain',
                     'method': 'POST'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(DRAIN, base.LEGACY_ADMIN)),
    policy.DocumentedRuleDefault(
        name=UNDRAIN, check_str=base.ADMIN,
        description='Undrain a device (microversion 2.6): new binds may '
                    'land on it again.',
        operations=[{'path': '/v2/devices/{device_uuid}/undrain',
                     'method': 'POST'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(UNDRAIN, base.LEGACY_ADMIN)),
    policy.DocumentedRuleDefault(
        name=CLEAR_HEALTH, check_str=base.ADMIN,
        description='Clear the health of a device (microversion 2.6): '
                    'healthy again, offered to the scheduler unless '
                    'something else holds it out.',
        operations=[{'path': '/v2/devices/{device_uuid}/clear_health',
                     'method': 'POST'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(CLEAR_HEALTH, base.LEGACY_ADMIN)),
]


def list_rules():
    """The rules of this resource."""
    return rules
