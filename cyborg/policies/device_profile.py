"""Policy rules of /v2/device_profiles."""

from oslo_policy import policy

from cyborg.policies import base

LIST = 'cyborg:device_profile:get_all'
SHOW = 'cyborg:device_profile:get_one'
CREATE = 'cyborg:device_profile:create'
DELETE = 'cyborg:device_profile:delete'

rules = [
    policy.DocumentedRuleDefault(
        name=LIST, check_str=base.READER_OR_ADMIN,
        description='List device profiles, optionally filtered by name.',
        operations=[{'path': '/v2/device_profiles', 'method': 'GET'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(LIST, base.LEGACY_ADMIN_OR_OWNER)),
    policy.DocumentedRuleDefault(
        name=SHOW, check_str=base.READER_OR_ADMIN,
        description='Show one device profile, by uuid (or by name from '
                    'microversion 2.2).',
        operations=[{'path': '/v2/device_profiles/{device_profile_uuid}',
                     'method': 'GET'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(SHOW, base.LEGACY_ADMIN_OR_OWNER)),
    policy.DocumentedRuleDefault(
        name=CREATE, check_str=base.ADMIN,
        description='Create a device profile.',
        operations=[{'path': '/v2/device_profiles', 'method': 'POST'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(CREATE, base.LEGACY_ADMIN)),
    policy.DocumentedRuleDefault(
        name=DELETE, check_str=base.ADMIN,
        description='Delete device profiles, by uuid or by name.',
        operations=[
            {'path': '/v2/device_profiles/{device_profile_uuid_or_name}',
             'method': 'DELETE'},
            {'path': '/v2/device_profiles?value={names_or_uuid}',
             'method': 'DELETE'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(DELETE, base.LEGACY_ADMIN)),
]


def list_rules():
    """The rules of this resource."""
    return rules
