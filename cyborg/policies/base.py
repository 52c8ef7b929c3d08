"""Check strings shared by the rules of every resource, and the base rules.

The role checks are the defaults upstream's clients and Nova expect
(admin, project member, reader or manager, and the service role); the
deprecated ``LEGACY_*`` checks are what operators get with
``[oslo_policy] enforce_new_defaults = False``.

Each role check is a base rule of its own, under the name OpenStack Cyborg
gives it (``admin_api``, ``project_reader_or_admin``...), and the rules of
the resources refer to it (``rule:admin_api``) rather than repeating it. A
policy file written for OpenStack Cyborg therefore keeps working here: an
override of ``admin_api`` changes every rule that names it, as it did
there, and the legacy names such a file refers to (``admin_or_owner``,
``is_admin``...) are defined.
"""

from oslo_policy import policy

PROJECT_SCOPE = ['project']

# The base rules' names, OpenStack Cyborg's.
ADMIN_API = 'admin_api'
PROJECT_ADMIN_API = 'project_admin_api'
PROJECT_MEMBER_API = 'project_member_api'
PROJECT_READER_API = 'project_reader_api'
PROJECT_MANAGER_API = 'project_manager_api'
SERVICE_API = 'service_api'
PROJECT_MEMBER_OR_ADMIN = 'project_member_or_admin'
PROJECT_READER_OR_ADMIN = 'project_reader_or_admin'
PROJECT_MANAGER_OR_ADMIN = 'project_manager_or_admin'
PROJECT_MEMBER_OR_SERVICE = 'project_member_or_service'

# The check strings the resources' rules use.
ADMIN = 'rule:' + ADMIN_API
READER_OR_ADMIN = 'rule:' + PROJECT_READER_OR_ADMIN
MANAGER_OR_ADMIN = 'rule:' + PROJECT_MANAGER_OR_ADMIN
MEMBER_OR_SERVICE = 'rule:' + PROJECT_MEMBER_OR_SERVICE
SERVICE = 'rule:' + SERVICE_API
# Readers of a history: admins and the service role see every entry, a
# project's readers and members only those of their own ARQs (see
# ``cyborg.policies.history``).
HISTORY_READER = ('rule:%s or rule:%s or rule:%s or rule:%s'
                  % (PROJECT_READER_API, PROJECT_MEMBER_API, ADMIN_API,
                     SERVICE_API))

LEGACY_ADMIN = 'rule:context_is_admin'
LEGACY_ADMIN_OR_OWNER = 'rule:context_is_admin or project_id:%(project_id)s'

DEPRECATED_REASON = (
    'The Accelerator API now understands the reader, member and manager '
    'roles and the service role of keystone.')
DEPRECATED_SINCE = '2025.1'

CONTEXT_IS_ADMIN = 'context_is_admin'
SERVICE_ROLE = 'service_role'

_IN_PROJECT = ' and project_id:%(project_id)s'

# OpenStack Cyborg's role checks, under its names and with its defaults.
role_rules = [
    policy.RuleDefault(
        name=ADMIN_API, check_str='role:admin',
        description='An administrator of the cloud.'),
    policy.RuleDefault(
        name=PROJECT_ADMIN_API, check_str='role:admin' + _IN_PROJECT,
        description='An administrator of the target\'s project.'),
    policy.RuleDefault(
        name=PROJECT_MEMBER_API, check_str='role:member' + _IN_PROJECT,
        description='A member of the target\'s project.'),
    policy.RuleDefault(
        name=PROJECT_READER_API, check_str='role:reader' + _IN_PROJECT,
        description='A reader of the target\'s project.'),
    policy.RuleDefault(
        name=PROJECT_MANAGER_API, check_str='role:manager' + _IN_PROJECT,
        description='A manager of the target\'s project.'),
    policy.RuleDefault(
        name=SERVICE_API, check_str='role:service',
        description='A caller holding the service role (for example '
                    'Nova).'),
    policy.RuleDefault(
        name=PROJECT_MEMBER_OR_ADMIN,
        check_str='rule:%s or rule:%s' % (PROJECT_MEMBER_API, ADMIN_API),
        description='A member of the target\'s project, or an '
                    'administrator.'),
    policy.RuleDefault(
        name=PROJECT_READER_OR_ADMIN,
        check_str='rule:%s or rule:%s' % (PROJECT_READER_API, ADMIN_API),
        description='A reader of the target\'s project, or an '
                    'administrator.'),
    policy.RuleDefault(
        name=PROJECT_MANAGER_OR_ADMIN,
        check_str='rule:%s or rule:%s' % (PROJECT_MANAGER_API, ADMIN_API),
        description='A manager of the target\'s project, or an '
                    'administrator.'),
    policy.RuleDefault(
        name=PROJECT_MEMBER_OR_SERVICE,
        check_str='rule:%s or rule:%s' % (PROJECT_MEMBER_API, SERVICE_API),
        description='A member of the target\'s project, or a caller '
                    'holding the service role.'),
]

# OpenStack Cyborg's legacy rule names, which older policy files refer to.
# Nothing here uses them. Its "default" rule is left out on purpose: under
# that name oslo.policy would answer for any rule a file refers to
# without defining it, which is refused here.
legacy_names = [
    policy.RuleDefault(
        name='is_admin', check_str='rule:' + ADMIN_API,
        description='Legacy name of an administrator, for policy files '
                    'written for OpenStack Cyborg.'),
    policy.RuleDefault(
        name='admin_or_owner',
        check_str='is_admin:True or project_id:%(project_id)s',
        description='Legacy check: an administrator or the owner, for '
                    'policy files written for OpenStack Cyborg.'),
    policy.RuleDefault(
        name='admin_or_user',
        check_str='is_admin:True or user_id:%(user_id)s',
        description='Legacy check: an administrator or the user, for '
                    'policy files written for OpenStack Cyborg.'),
    policy.RuleDefault(
        name='public_api', check_str='is_public_api:True',
        description='Legacy check of a public route, for policy files '
                    'written for OpenStack Cyborg.'),
    policy.RuleDefault(
        name='allow', check_str='@',
        description='Legacy check that lets every caller through, for '
                    'policy files written for OpenStack Cyborg.'),
    policy.RuleDefault(
        name='deny', check_str='!',
        description='Legacy check that refuses every caller, for policy '
                    'files written for OpenStack Cyborg.'),
]

rules = [
    policy.RuleDefault(
        name=CONTEXT_IS_ADMIN, check_str=ADMIN,
        description='Who is an administrator: decides the is_admin flag of '
                    'the request context.'),
    policy.RuleDefault(
        name=SERVICE_ROLE, check_str=SERVICE,
        description='Callers holding the service role (for example Nova).'),
] + role_rules + legacy_names


def legacy_rule(name, check_str):
    """The pre-role default of rule ``name``, for enforce_new_defaults=False."""
    return policy.DeprecatedRule(name=name, check_str=check_str,
                                 deprecated_reason=DEPRECATED_REASON,
                                 deprecated_since=DEPRECATED_SINCE)


def list_rules():
    """The base rules."""
    return rules
