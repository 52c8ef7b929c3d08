"""Check strings shared by the rules of every resource, and the base rules.

The role checks are the defaults upstream's clients and Nova expect
(admin, project member or reader, and the service role); the deprecated
``LEGACY_*`` checks are what operators get with
``[oslo_policy] enforce_new_defaults = False``.
"""

from oslo_policy import policy

PROJECT_SCOPE = ['project']

ADMIN = 'role:admin'
READER_OR_ADMIN = '(role:reader and project_id:%(project_id)s) or role:admin'
MANAGER_OR_ADMIN = ('(role:manager and project_id:%(project_id)s) or '
                    'role:admin')
MEMBER_OR_SERVICE = ('(role:member and project_id:%(project_id)s) or '
                     'role:service')
SERVICE = 'role:service'
# Readers of a history: admins and the service role see every entry, a
# project's readers and members only those of their own ARQs (see
# ``cyborg.policies.history``).
HISTORY_READER = ('(role:reader and project_id:%(project_id)s) or '
                  '(role:member and project_id:%(project_id)s) or '
                  'role:admin or role:service')

LEGACY_ADMIN = 'rule:context_is_admin'
LEGACY_ADMIN_OR_OWNER = 'rule:context_is_admin or project_id:%(project_id)s'

DEPRECATED_REASON = (
    'The Accelerator API now understands the reader, member and manager '
    'roles and the service role of keystone.')
DEPRECATED_SINCE = '2025.1'

CONTEXT_IS_ADMIN = 'context_is_admin'
SERVICE_ROLE = 'service_role'

rules = [
    policy.RuleDefault(
        name=CONTEXT_IS_ADMIN, check_str=ADMIN,
        description='Who is an administrator: decides the is_admin flag of '
                    'the request context.'),
    policy.RuleDefault(
        name=SERVICE_ROLE, check_str=SERVICE,
        description='Callers holding the service role (for example Nova).'),
]


def legacy_rule(name, check_str):
    """The pre-role default of rule ``name``, for enforce_new_defaults=False."""
    return policy.DeprecatedRule(name=name, check_str=check_str,
                                 deprecated_reason=DEPRECATED_REASON,
                                 deprecated_since=DEPRECATED_SINCE)


def list_rules():
    """The base rules."""
    return rules
