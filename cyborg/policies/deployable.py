"""Policy rules of /v2/deployables."""

from oslo_policy import policy

from cyborg.policies import base

LIST = 'cyborg:deployable:get_all'
SHOW = 'cyborg:deployable:get_one'
PROGRAM = 'cyborg:deployable:program'
LIST_ATTRIBUTES = 'cyborg:deployable:get_attributes'
SHOW_ATTRIBUTE = 'cyborg:deployable:get_attribute'
HISTORY = 'cyborg:deployable:history'
CLEAR_HEALTH = 'cyborg:deployable:clear_health'
DRAIN = 'cyborg:deployable:drain'
UNDRAIN = 'cyborg:deployable:undrain'

rules = [
    policy.DocumentedRuleDefault(
        name=LIST, check_str=base.MANAGER_OR_ADMIN,
        description='List deployables.',
        operations=[{'path': '/v2/deployables', 'method': 'GET'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(LIST, base.LEGACY_ADMIN)),
    policy.DocumentedRuleDefault(
        name=SHOW, check_str=base.MANAGER_OR_ADMIN,
        description='Show one deployable.',
        operations=[{'path': '/v2/deployables/{deployable_uuid}',
                     'method': 'GET'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(SHOW, base.LEGACY_ADMIN)),
    policy.DocumentedRuleDefault(
        name=PROGRAM, check_str=base.ADMIN,
        description='Program an FPGA region with a bitstream from Glance.',
        operations=[{'path': '/v2/deployables/{deployable_uuid}/program',
                     'method': 'PATCH'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(PROGRAM, base.LEGACY_ADMIN)),
    # The attributes of a deployable are part of what showing it gives
    # (its attributes_list): the same readers, no wider.
    policy.DocumentedRuleDefault(
        name=LIST_ATTRIBUTES, check_str=base.MANAGER_OR_ADMIN,
        description='List the attributes of one deployable, each with the '
                    'attributes nested under it (microversion 2.4).',
        operations=[{'path': '/v2/deployables/{deployable_uuid}/attributes',
                     'method': 'GET'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(LIST_ATTRIBUTES, base.LEGACY_ADMIN)),
    policy.DocumentedRuleDefault(
        name=SHOW_ATTRIBUTE, check_str=base.MANAGER_OR_ADMIN,
        description='Show the attributes with one key of one deployable, '
                    'each with the attributes nested under it '
                    '(microversion 2.4).',
        operations=[{'path': '/v2/deployables/{deployable_uuid}/attributes/'
                             '{key}',
                     'method': 'GET'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(SHOW_ATTRIBUTE, base.LEGACY_ADMIN)),
    policy.DocumentedRuleDefault(
        name=HISTORY, check_str=base.HISTORY_READER,
        description='Read the history of a deployable (microversion 2.5): '
                    'admins and the service role every entry, a project\'s '
                    'readers and members those of its own ARQs only.',
        operations=[{'path': '/v2/deployables/{deployable_uuid}/history',
                     'method': 'GET'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(HISTORY,
                                         base.LEGACY_ADMIN_OR_OWNER)),
    policy.DocumentedRuleDefault(
        name=DRAIN, check_str=base.ADMIN,
        description='Drain a deployable, one region and what is below it '
                    '(microversion 2.6): no new bind lands on it, its '
                    'bound ARQs keep working.',
        operations=[{'path': '/v2/deployables/{deployable_uuid}/drain',
                     'method': 'POST'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(DRAIN, base.LEGACY_ADMIN)),
    policy.DocumentedRuleDefault(
        name=UNDRAIN, check_str=base.ADMIN,
        description='Undrain a deployable (microversion 2.6): new binds '
                    'may land on it again.',
        operations=[{'path': '/v2/deployables/{deployable_uuid}/undrain',
                     'method': 'POST'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(UNDRAIN, base.LEGACY_ADMIN)),
    policy.DocumentedRuleDefault(
        name=CLEAR_HEALTH, check_str=base.ADMIN,
        description='Clear the health of a deployable (microversion 2.6): '
                    'healthy again, offered to the scheduler unless '
                    'something else holds it out.',
        operations=[{'path': '/v2/deployables/{deployable_uuid}/clear_health',
                     'method': 'POST'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(CLEAR_HEALTH, base.LEGACY_ADMIN)),
]


def list_rules():
    """The rules of this resource."""
    return rules
