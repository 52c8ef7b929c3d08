"""Policy rules of /v2/attributes."""

from oslo_policy import policy

from cyborg.policies import base

LIST = 'cyborg:attribute:get_all'
SHOW = 'cyborg:attribute:get_one'
CREATE = 'cyborg:attribute:create'
DELETE = 'cyborg:attribute:delete'

rules = [
    policy.DocumentedRuleDefault(
        name=LIST, check_str=base.MANAGER_OR_ADMIN,
        description='List attributes, optionally those of one deployable '
                    'or with one key.',
        operations=[{'path': '/v2/attributes', 'method': 'GET'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(LIST, base.LEGACY_ADMIN)),
    policy.DocumentedRuleDefault(
        name=SHOW, check_str=base.MANAGER_OR_ADMIN,
        description='Show one attribute.',
        operations=[{'path': '/v2/attributes/{attribute_uuid}',
                     'method': 'GET'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(SHOW, base.LEGACY_ADMIN)),
    policy.DocumentedRuleDefault(
        name=CREATE, check_str=base.ADMIN,
        description='Create an attribute of a deployable.',
        operations=[{'path': '/v2/attributes', 'method': 'POST'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(CREATE, base.LEGACY_ADMIN)),
    policy.DocumentedRuleDefault(
        name=DELETE, check_str=base.ADMIN,
        description='Delete an attribute.',
        operations=[{'path': '/v2/attributes/{attribute_uuid}',
                     'method': 'DELETE'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(DELETE, base.LEGACY_ADMIN)),
]


def list_rules():
    """The rules of this resource."""
    return rules
