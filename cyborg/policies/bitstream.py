"""Policy rules of /v2/bitstreams: prefetching a bitstream into the
hosts' caches."""

from oslo_policy import policy

from cyborg.policies import base

PREFETCH = 'cyborg:bitstream:prefetch'

rules = [
    # Downloads to every fitting host of the fleet: an operator's call.
    policy.DocumentedRuleDefault(
        name=PREFETCH, check_str=base.ADMIN,
        description='Prefetch a Glance bitstream into the bitstream caches '
                    'of the hosts whose FPGA regions it fits (from '
                    'microversion 2.6).',
        operations=[{'path': '/v2/bitstreams/{image_id}/prefetch',
                     'method': 'POST'}],
        scope_types=base.PROJECT_SCOPE,
        deprecated_rule=base.legacy_rule(PREFETCH, base.LEGACY_ADMIN)),
]


def list_rules():
    """The rules of this resource."""
    return rules
