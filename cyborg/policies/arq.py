"""Policy rules of /v2/accelerator_requests (ARQs).

Binding, unbinding and deleting bound ARQs also need a valid service token;
that check is made by the ARQ controller, not by these rules.
"""

from oslo_policy import policy

from cyborg.policies import base

LIST = 'cyborg:arq:get_all'
SHOW = 'cyborg:arq:get_one'
CREATE = 'cyborg:arq:create'
UPDATE = 'cyborg:arq:update'
DELETE = 'cyborg:arq:delete'

rules = [
    policy.DocumentedRuleDefault(
        name=LIST, check_str=base.READER_OR_ADMIN,
        description='List accelerator requests, optionally those of one '
                    'instance and only when all are resolved.',
        operations=[{'path': '/v2/accelerator_requests', 'method': 'GET'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(LIST, base.LEGACY_ADMIN_OR_OWNER)),
    policy.DocumentedRuleDefault(
        name=SHOW, check_str=base.READER_OR_ADMIN,
        description='Show one accelerator request.',
        operations=[{'path': '/v2/accelerator_requests/{arq_uuid}',
                     'method': 'GET'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(SHOW, base.LEGACY_ADMIN_OR_OWNER)),
    policy.DocumentedRuleDefault(
        name=CREATE, check_str=base.MEMBER_OR_SERVICE,
        description='Create accelerator requests from a device profile.',
        operations=[{'path': '/v2/accelerator_requests', 'method': 'POST'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(CREATE,
                                         base.LEGACY_ADMIN_OR_OWNER)),
    policy.DocumentedRuleDefault(
        name=UPDATE, check_str=base.MEMBER_OR_SERVICE,
        description='Bind or unbind accelerator requests (a service token '
                    'is needed as well).',
        operations=[
            {'path': '/v2/accelerator_requests', 'method': 'PATCH'},
            {'path': '/v2/accelerator_requests/{arq_uuid}',
             'method': 'PATCH'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(UPDATE,
                                         base.LEGACY_ADMIN_OR_OWNER)),
    policy.DocumentedRuleDefault(
        name=DELETE, check_str=base.MEMBER_OR_SERVICE,
        description='Delete accelerator requests, by uuid or all those of '
                    'an instance (deleting bound ones needs a service '
                    'token as well).',
        operations=[
            {'path': '/v2/accelerator_requests?arqs={arq_uuids}',
             'method': 'DELETE'},
            {'path': '/v2/accelerator_requests?instance={instance_uuid}',
             'method': 'DELETE'},
            {'path': '/v2/accelerator_requests/{arq_uuid}',
             'method': 'DELETE'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(DELETE,
                                         base.LEGACY_ADMIN_OR_OWNER)),
]


def list_rules():
    """The rules of this resource."""
    return rules
