"""Policy rules of /v2/fleet, the fleet page's data."""

from oslo_policy import policy

from cyborg.policies import base

GET = 'cyborg:fleet:get'

rules = [
    # The fleet is the devices and deployables of every host: the readers
    # of the device list, no wider. ARQs in it are limited to the caller's
    # project unless the caller is an admin (arq.owner_filter).
    policy.DocumentedRuleDefault(
        name=GET, check_str=base.MANAGER_OR_ADMIN,
        description='Show the fleet: every host\'s devices and deployable '
                    'trees with attach handle usage, and the ARQs by state '
                    '(the data of the fleet page; the page itself holds '
                    'no data and needs no rule).',
        operations=[{'path': '/v2/fleet', 'method': 'GET'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(GET, base.LEGACY_ADMIN)),
]


def list_rules():
    """The rules of this resource."""
    return rules
