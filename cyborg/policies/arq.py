"""Policy rules of /v2/accelerator_requests (ARQs), and who owns which ARQ.

Binding, unbinding and deleting bound ARQs also need a valid service token;
that check is made by the ARQ controller, not by these rules.

Besides the rules, the ownership rules both the API (reads) and the
conductor's ARQ workflows (writes) apply live here, so that the two layers
cannot disagree: callers other than admins and the service role act on
their own project's ARQs only, any other ARQ looks missing (404), and only
an administrator may move an ARQ to another project by binding it.
"""

from oslo_policy import policy

from cyborg import exception
from cyborg.policies import base

LIST = 'cyborg:arq:get_all'
SHOW = 'cyborg:arq:get_one'
CREATE = 'cyborg:arq:create'
UPDATE = 'cyborg:arq:update'
DELETE = 'cyborg:arq:delete'

# The 403 of a bind by a non-admin that sets project_id (check_project_ids).
PROJECT_ID_NEEDS_ADMIN = ('Only an administrator may set the project_id of '
                          'an ARQ.')

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


def owner_filter(context):
    """The project whose ARQs ``context`` may act on, or None for all.

    Admins and callers with the service role (Nova) act on every project.
    """
    if context.is_admin or context.can(base.SERVICE_ROLE, fatal=False):
        return None
    return context.project_id


def not_found(uuid):
    """The 404 of ARQ ``uuid``: unknown, or of a project the caller may not see."""
    return exception.ResourceNotFound(resource='ARQ', key='uuid', value=uuid)


def check_project_ids(context, bindings):
    """403 when a caller other than an admin sets an ARQ's project.

    ``bindings`` maps ARQ uuids to bindings; a binding's ``project_id``
    other than None moves the ARQ to that project when it is bound.

    :raises: exception.PolicyNotAuthorized (403)
    """
    if context.is_admin:
        return
    if any(binding.get('project_id') is not None
           for binding in bindings.values()):
        raise exception.PolicyNotAuthorized(PROJECT_ID_NEEDS_ADMIN)
