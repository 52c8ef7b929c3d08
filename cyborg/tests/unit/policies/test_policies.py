"""The policy rules: documented, registered, and enforced with their defaults."""

import os
import subprocess
import sys

import fixtures
from oslo_config import cfg
from oslo_policy import opts as policy_opts
from oslo_policy import policy

from cyborg import conf

from cyborg import context as cyborg_context
from cyborg import exception
from cyborg import policies
from cyborg.policies import arq
from cyborg.policies import attribute
from cyborg.policies import bitstream
from cyborg.policies import base as base_policies
from cyborg.policies import deployable
from cyborg.policies import device
from cyborg.policies import device_profile
from cyborg.policies import fleet
from cyborg.policies import history
from cyborg.tests import base

# Every rule upstream's clients and Nova rely on, and its default.
EXPECTED_DEFAULTS = {
    'cyborg:device_profile:get_all': base_policies.READER_OR_ADMIN,
    'cyborg:device_profile:get_one': base_policies.READER_OR_ADMIN,
    'cyborg:device_profile:create': base_policies.ADMIN,
    'cyborg:device_profile:delete': base_policies.ADMIN,
    'cyborg:arq:get_all': base_policies.READER_OR_ADMIN,
    'cyborg:arq:get_one': base_policies.READER_OR_ADMIN,
    'cyborg:arq:create': base_policies.MEMBER_OR_SERVICE,
    'cyborg:arq:update': base_policies.MEMBER_OR_SERVICE,
    'cyborg:arq:delete': base_policies.MEMBER_OR_SERVICE,
    'cyborg:device:get_all': base_policies.MANAGER_OR_ADMIN,
    'cyborg:device:get_one': base_policies.MANAGER_OR_ADMIN,
    'cyborg:device:disable': base_policies.ADMIN,
    'cyborg:device:enable': base_policies.ADMIN,
    'cyborg:deployable:get_all': base_policies.MANAGER_OR_ADMIN,
    'cyborg:deployable:get_one': base_policies.MANAGER_OR_ADMIN,
    'cyborg:deployable:program': base_policies.ADMIN,
    'cyborg:deployable:get_attributes': base_policies.MANAGER_OR_ADMIN,
    'cyborg:deployable:get_attribute': base_policies.MANAGER_OR_ADMIN,
    'cyborg:attribute:get_all': base_policies.MANAGER_OR_ADMIN,
    'cyborg:attribute:get_one': base_policies.MANAGER_OR_ADMIN,
    'cyborg:attribute:create': base_policies.ADMIN,
    'cyborg:attribute:delete': base_policies.ADMIN,
    'cyborg:fleet:get': base_policies.MANAGER_OR_ADMIN,
    # Microversion 2.5's, Cyborg's own: the caller's own ARQs' entries
    # for a project's readers and members (cyborg.policies.history).
    'cyborg:device:history': base_policies.HISTORY_READER,
    'cyborg:deployable:history': base_policies.HISTORY_READER,
    # Microversion 2.6's: sends a bitstream to the hosts' caches.
    'cyborg:bitstream:prefetch': base_policies.ADMIN,
    # Microversion 2.6's: drain and undrain a device or a deployable.
    'cyborg:device:drain': base_policies.ADMIN,
    'cyborg:device:undrain': base_policies.ADMIN,
    'cyborg:deployable:drain': base_policies.ADMIN,
    'cyborg:deployable:undrain': base_policies.ADMIN,
    # Microversion 2.6's: clear the health of a device or a deployable.
    'cyborg:device:clear_health': base_policies.ADMIN,
    'cyborg:deployable:clear_health': base_policies.ADMIN,
}


def tool(name):
    """A console script of the running virtualenv."""
    return os.path.join(os.path.dirname(sys.executable), name)


def make_context(roles, project_id='project-1', **kwargs):
    return cyborg_context.RequestContext(user_id='user-1',
                                         project_id=project_id,
                                         roles=roles, **kwargs)


class PolicyTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        # The enforcer registers these options; tests set them before it.
        policy_opts.set_defaults(conf.CONF)
        policies.init(conf.CONF)
        # Built again at the first check, after the test's own settings.
        policies.reset()
        self.addCleanup(policies.reset)


class TestRuleDefinitions(PolicyTestCase):

    def test_contract_rules_have_the_contract_defaults(self):
        rules = {rule.name: rule for rule in policies.list_rules()
                 if isinstance(rule, policy.DocumentedRuleDefault)}
        self.assertEqual(EXPECTED_DEFAULTS,
                         {name: rule.check_str for name, rule in rules.items()})

    def test_contract_check_strings(self):
        """The resources' rules name OpenStack Cyborg's base rules, whose
        defaults are the role checks its clients expect."""
        self.assertEqual('rule:project_reader_or_admin',
                         base_policies.READER_OR_ADMIN)
        self.assertEqual('rule:project_manager_or_admin',
                         base_policies.MANAGER_OR_ADMIN)
        self.assertEqual('rule:project_member_or_service',
                         base_policies.MEMBER_OR_SERVICE)
        self.assertEqual('rule:admin_api', base_policies.ADMIN)
        defaults = {rule.name: rule.check_str
                    for rule in policies.list_rules()}
        in_project = ' and project_id:%(project_id)s'
        self.assertEqual({
            'admin_api': 'role:admin',
            'service_api': 'role:service',
            'project_reader_api': 'role:reader' + in_project,
            'project_member_api': 'role:member' + in_project,
            'project_manager_api': 'role:manager' + in_project,
            'project_reader_or_admin':
                'rule:project_reader_api or rule:admin_api',
            'project_manager_or_admin':
                'rule:project_manager_api or rule:admin_api',
            'project_member_or_service':
                'rule:project_member_api or rule:service_api',
        }, {name: defaults[name] for name in (
            'admin_api', 'service_api', 'project_reader_api',
            'project_member_api', 'project_manager_api',
            'project_reader_or_admin', 'project_manager_or_admin',
            'project_member_or_service')})

    def test_every_rule_is_described(self):
        for rule in policies.list_rules():
            self.assertTrue(rule.description and rule.description.strip(),
                            rule.name)
            self.assertTrue(rule.description.endswith('.'), rule.name)

    def test_every_api_rule_names_its_operations(self):
        for rule in policies.list_rules():
            if not rule.name.startswith('cyborg:'):
                continue
            self.assertIsInstance(rule, policy.DocumentedRuleDefault,
                                  rule.name)
            self.assertTrue(rule.operations, rule.name)
            for operation in rule.operations:
                self.assertIn(operation['method'],
                              ('GET', 'POST', 'PATCH', 'DELETE'), rule.name)
                self.assertTrue(operation['path'].startswith('/v2/'),
                                rule.name)
            self.assertEqual(['project'], rule.scope_types, rule.name)

    def test_rule_names_are_unique(self):
        names = [rule.name for rule in policies.list_rules()]
        self.assertEqual(len(names), len(set(names)))

    def test_rule_constants_name_registered_rules(self):
        names = {rule.name for rule in policies.list_rules()}
        constants = {
            device_profile.LIST, device_profile.SHOW, device_profile.CREATE,
            device_profile.DELETE, arq.LIST, arq.SHOW, arq.CREATE, arq.UPDATE,
            arq.DELETE, device.LIST, device.SHOW, device.DISABLE,
            device.ENABLE, deployable.LIST, deployable.SHOW,
            deployable.PROGRAM, deployable.LIST_ATTRIBUTES,
            deployable.SHOW_ATTRIBUTE, attribute.LIST, attribute.SHOW,
            attribute.CREATE, attribute.DELETE, fleet.GET, device.HISTORY,
            deployable.HISTORY, bitstream.PREFETCH, device.DRAIN,
            device.UNDRAIN, deployable.DRAIN, deployable.UNDRAIN,
            device.CLEAR_HEALTH, deployable.CLEAR_HEALTH}
        self.assertEqual(set(EXPECTED_DEFAULTS), constants)
        self.assertLessEqual(constants, names)

    def test_sample_file_lists_every_rule(self):
        sample = self.useFixture(fixtures.TempDir()).join('policy.yaml.sample')
        subprocess.run([tool('oslopolicy-sample-generator'), '--namespace',
                        'cyborg', '--output-file', sample],
                       check=True, capture_output=True)
        with open(sample) as sample_file:
            text = sample_file.read()
        for rule in policies.list_rules():
            self.assertIn('#"%s": "%s"' % (rule.name, rule.check_str), text)
        self.assertIn('# DELETE  /v2/device_profiles?value={names_or_uuid}',
                      text)

    def test_policy_generator_uses_the_enforcer_entry_point(self):
        directory = self.useFixture(fixtures.TempDir()).path
        policy_file = os.path.join(directory, 'policy.yaml')
        with open(policy_file, 'w') as rules_file:
            rules_file.write('"cyborg:device:get_all": "role:reader"\n')
        config_file = os.path.join(directory, 'cyborg.conf')
        with open(config_file, 'w') as config:
            config.write('[oslo_policy]\npolicy_file = %s\n' % policy_file)
        result = subprocess.run(
            [tool('oslopolicy-policy-generator'), '--namespace', 'cyborg',
             '--config-file', config_file],
            check=True, capture_output=True, text=True, cwd=directory)
        effective = dict(line.split(': ', 1)
                         for line in result.stdout.splitlines() if line)
        self.assertEqual('"role:reader"',
                         effective['"cyborg:device:get_all"'])
        self.assertEqual('"rule:admin_api"',
                         effective['"cyborg:device:enable"'])


class TestAuthorize(PolicyTestCase):

    def test_reader_of_the_project_may_list_profiles(self):
        context = make_context(['reader'])
        self.assertTrue(context.can(device_profile.LIST))

    def test_member_without_reader_may_not_list_profiles(self):
        context = make_context(['member'])
        error = self.assertRaises(exception.PolicyNotAuthorized,
                                  context.can, device_profile.LIST)
        self.assertEqual(403, error.code)
        self.assertEqual('Policy does not allow '
                         'cyborg:device_profile:get_all to be performed.',
                         str(error))

    def test_non_fatal_check_returns_false(self):
        context = make_context(['reader'])
        self.assertFalse(context.can(device_profile.CREATE, fatal=False))
        self.assertTrue(make_context(['admin']).can(device_profile.CREATE))

    def test_reader_of_another_project_is_refused(self):
        context = make_context(['reader'], project_id='project-1')
        self.assertRaises(exception.PolicyNotAuthorized, context.can,
                          arq.SHOW, {'project_id': 'project-2'})
        self.assertTrue(context.can(arq.SHOW, {'project_id': 'project-1'}))

    def test_service_role_may_create_and_bind_arqs_of_any_project(self):
        context = make_context(['service'], project_id='service-project')
        self.assertTrue(context.can(arq.CREATE,
                                    {'project_id': 'project-2'}))
        self.assertTrue(context.can(arq.UPDATE,
                                    {'project_id': 'project-2'}))
        self.assertFalse(context.can(device.LIST, fatal=False))

    def test_manager_may_read_devices_but_not_disable_them(self):
        context = make_context(['manager'])
        self.assertTrue(context.can(device.LIST))
        self.assertTrue(context.can(deployable.SHOW))
        self.assertTrue(context.can(attribute.LIST))
        self.assertFalse(context.can(device.DISABLE, fatal=False))
        self.assertFalse(context.can(deployable.PROGRAM, fatal=False))

    def test_deployable_attributes_are_read_as_the_deployable_is(self):
        # 2.4's attributes of a deployable are part of what showing it
        # gives: the same callers, no wider.
        for rule in (deployable.LIST_ATTRIBUTES, deployable.SHOW_ATTRIBUTE):
            self.assertTrue(make_context(['admin']).can(rule), rule)
            self.assertTrue(make_context(['manager']).can(rule), rule)
            self.assertFalse(make_context(['reader']).can(rule, fatal=False),
                             rule)
            self.assertFalse(make_context(['member']).can(rule, fatal=False),
                             rule)
            self.assertFalse(make_context(['service']).can(rule, fatal=False),
                             rule)
            self.assertFalse(make_context(['manager']).can(
                rule, {'project_id': 'project-2'}, fatal=False), rule)

    def test_history_is_read_by_readers_and_members_of_their_arqs(self):
        for rule in (device.HISTORY, deployable.HISTORY):
            for roles in (['admin'], ['service'], ['reader'], ['member']):
                self.assertTrue(make_context(roles).can(rule), (rule, roles))
            self.assertFalse(make_context(['manager']).can(
                rule, fatal=False), rule)
        # Who sees which entries, once the rule passed.
        self.assertIsNone(history.arq_project_filter(
            make_context(['admin'], is_admin=None)))
        self.assertIsNone(history.arq_project_filter(
            make_context(['service'], project_id='service-project')))
        self.assertEqual('project-1', history.arq_project_filter(
            make_context(['member'], project_id='project-1')))
        self.assertEqual(history.NO_PROJECT, history.arq_project_filter(
            make_context(['reader'], project_id=None)))

    def test_system_scoped_admin_is_refused(self):
        context = cyborg_context.RequestContext(
            user_id='admin', roles=['admin', 'reader'], system_scope='all')
        self.assertRaises(exception.PolicyNotAuthorized, context.can,
                          device.LIST)
        self.assertFalse(context.can(device.LIST, fatal=False))

    def test_unknown_rule_is_an_error(self):
        context = make_context(['admin'])
        self.assertRaises(policy.PolicyNotRegistered, context.can,
                          'cyborg:nothing:get_all')

    def test_admin_role_is_context_admin(self):
        self.assertTrue(policies.check_is_admin(make_context(['admin'])))
        self.assertFalse(policies.check_is_admin(
            make_context(['member', 'reader', 'manager', 'service'])))

    def test_legacy_defaults_when_new_defaults_are_off(self):
        self.config(enforce_new_defaults=False, group='oslo_policy')
        owner = make_context(['member'])
        # Legacy: the owner may read its profiles without the reader role.
        self.assertTrue(owner.can(device_profile.LIST))
        # Device reads stay with administrators.
        self.assertFalse(owner.can(device.LIST, fatal=False))
        admin = make_context(['admin'])
        admin.is_admin = True
        self.assertTrue(admin.can(device.LIST))

    def test_policy_file_overrides_a_default(self):
        policy_file = self.useFixture(fixtures.TempDir()).join(
            'policy.yaml')
        with open(policy_file, 'w') as rules_file:
            rules_file.write('"cyborg:device:get_all": "role:reader"\n')
        self.config(policy_file=policy_file, group='oslo_policy')
        self.assertTrue(make_context(['reader']).can(device.LIST))
        self.assertFalse(make_context(['manager']).can(device.LIST,
                                                       fatal=False))


# The rule names of OpenStack Cyborg 17.0.0 (cyborg.policies of its
# package), base and legacy rules included: a policy file written for it
# may name any of them.
UPSTREAM_RULE_NAMES = {
    'admin_api', 'project_admin_api', 'project_member_api',
    'project_reader_api', 'project_member_or_admin',
    'project_reader_or_admin', 'service_api', 'project_manager_api',
    'project_manager_or_admin', 'project_member_or_service', 'public_api',
    'allow', 'deny', 'default', 'is_admin', 'admin_or_owner',
    'admin_or_user',
    'cyborg:device_profile:get_all', 'cyborg:device_profile:get_one',
    'cyborg:device_profile:create', 'cyborg:device_profile:delete',
    'cyborg:arq:get_all', 'cyborg:arq:get_one', 'cyborg:arq:create',
    'cyborg:arq:delete', 'cyborg:arq:update', 'cyborg:deployable:get_all',
    'cyborg:deployable:get_one', 'cyborg:deployable:program',
    'cyborg:device:get_all', 'cyborg:device:get_one',
    'cyborg:device:disable', 'cyborg:device:enable',
    'cyborg:attribute:get_all', 'cyborg:attribute:get_one',
    'cyborg:attribute:create', 'cyborg:attribute:delete',
}


class TestUpstreamPolicyFile(PolicyTestCase):
    """A policy file written for OpenStack Cyborg decides here as there."""

    def _policy_file(self, text):
        policy_file = self.useFixture(fixtures.TempDir()).join('policy.yaml')
        with open(policy_file, 'w') as rules_file:
            rules_file.write(text)
        self.config(policy_file=policy_file, group='oslo_policy')
        policies.reset()

    def test_every_upstream_rule_name_is_registered(self):
        names = {rule.name for rule in policies.list_rules()}
        # "default" alone is left out: it would answer for undefined rules.
        self.assertEqual({'default'}, UPSTREAM_RULE_NAMES - names)

    def test_an_override_of_admin_api_changes_every_admin_rule(self):
        cloud_admin = make_context(['cloud_admin'])
        self.assertFalse(cloud_admin.can(device_profile.CREATE, fatal=False))
        self._policy_file('"admin_api": "role:admin or role:cloud_admin"\n')
        for rule in (device_profile.CREATE, device.ENABLE, device.LIST,
                     deployable.PROGRAM, attribute.DELETE):
            self.assertTrue(cloud_admin.can(rule), rule)
        self.assertTrue(policies.check_is_admin(cloud_admin))
        self.assertFalse(make_context(['member']).can(device.ENABLE,
                                                      fatal=False))

    def test_a_narrower_admin_api_refuses_plain_admins(self):
        self._policy_file('"admin_api": "role:admin and role:cloud_admin"\n')
        admin = make_context(['admin'])
        self.assertFalse(admin.can(device_profile.CREATE, fatal=False))
        self.assertFalse(policies.check_is_admin(admin))
        self.assertTrue(make_context(['admin', 'cloud_admin']).can(
            device_profile.CREATE))

    def test_an_override_of_a_shared_role_rule_applies(self):
        member = make_context(['member'])
        self.assertFalse(member.can(device_profile.LIST, fatal=False))
        self._policy_file('"project_reader_or_admin": '
                          '"rule:project_member_api or rule:admin_api"\n')
        self.assertTrue(member.can(device_profile.LIST))
        self.assertTrue(member.can(arq.SHOW, {'project_id': 'project-1'}))
        self.assertFalse(make_context(['reader']).can(device_profile.LIST,
                                                      fatal=False))

    def test_legacy_names_a_file_refers_to_are_defined(self):
        self._policy_file('"cyborg:device:get_all": "rule:is_admin"\n'
                          '"cyborg:device:enable": "rule:deny"\n'
                          '"cyborg:device:get_one": "rule:allow"\n'
                          '"cyborg:arq:get_one": "rule:admin_or_owner"\n')
        self.assertTrue(make_context(['admin']).can(device.LIST))
        self.assertFalse(make_context(['manager']).can(device.LIST,
                                                       fatal=False))
        self.assertFalse(make_context(['admin']).can(device.ENABLE,
                                                     fatal=False))
        self.assertTrue(make_context(['anything']).can(device.SHOW))
        owner = make_context([], project_id='project-1')
        self.assertTrue(owner.can(arq.SHOW, {'project_id': 'project-1'}))
        self.assertFalse(owner.can(arq.SHOW, {'project_id': 'project-2'},
                                   fatal=False))

    def test_a_reference_to_an_undefined_rule_is_refused(self):
        self._policy_file('"cyborg:device:get_one": "rule:default"\n')
        self.assertFalse(make_context(['admin']).can(device.SHOW,
                                                     fatal=False))


class TestPolicyFileChanges(PolicyTestCase):
    """A changed policy file applies without a restart, within
    RELOAD_INTERVAL; between two looks no check reads the files again."""

    def setUp(self):
        super().setUp()
        self.now = 1000.0
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.policies.time.monotonic', lambda: self.now))
        self.policy_file = self.useFixture(fixtures.TempDir()).join(
            'policy.yaml')
        self._write('"cyborg:device:get_all": "role:reader"\n')
        self.config(policy_file=self.policy_file, group='oslo_policy')
        policies.reset()

    def _write(self, text):
        with open(self.policy_file, 'w') as rules_file:
            rules_file.write(text)
        # Another change time, as a later edit has.
        self.mtime = getattr(self, 'mtime', 1e9) + 10
        os.utime(self.policy_file, (self.mtime, self.mtime))

    def test_an_edit_applies_after_the_interval(self):
        reader = make_context(['reader'])
        self.assertTrue(reader.can(device.LIST))
        self._write('"cyborg:device:get_all": "role:admin"\n')
        self.now += policies.RELOAD_INTERVAL / 2
        self.assertTrue(reader.can(device.LIST))
        self.now += policies.RELOAD_INTERVAL
        self.assertFalse(reader.can(device.LIST, fatal=False))

    def test_no_file_is_looked_at_between_two_looks(self):
        reader = make_context(['reader'])
        reader.can(device.LIST)
        looks = []
        real = policy.Enforcer.load_rules

        def counted(enforcer, force_reload=False):
            looks.append(force_reload)
            return real(enforcer, force_reload)
        self.useFixture(fixtures.MonkeyPatch(
            'oslo_policy.policy.Enforcer.load_rules', counted))
        for _ in range(5):
            reader.can(device.LIST)
        self.assertEqual([], looks)
        self.now += policies.RELOAD_INTERVAL
        reader.can(device.LIST)
        self.assertEqual([False], looks)


class TestRememberedDecisions(PolicyTestCase):
    """A decision is remembered per rule, target and credentials until the
    next look at the policy files: oslo.policy evaluates it once."""

    def setUp(self):
        super().setUp()
        self.now = 1000.0
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.policies.time.monotonic', lambda: self.now))
        self.evaluated = []
        real = policy.Enforcer.authorize

        def counted(enforcer, rule, target, creds, *args, **kwargs):
            self.evaluated.append((rule, tuple(creds.roles)))
            return real(enforcer, rule, target, creds, *args, **kwargs)
        self.useFixture(fixtures.MonkeyPatch(
            'oslo_policy.policy.Enforcer.authorize', counted))

    def test_each_caller_gets_its_own_decision_once(self):
        admin, member = make_context(['admin']), make_context(['member'])
        for _ in range(3):
            self.assertTrue(admin.can(device.LIST))
            self.assertFalse(member.can(device.LIST, fatal=False))
            self.assertRaises(exception.PolicyNotAuthorized, member.can,
                              device.LIST)
        self.assertEqual([(device.LIST, ('admin',)),
                          (device.LIST, ('member',))], self.evaluated)
        # Another project is another target: decided again.
        other = make_context(['member'])
        other.project_id = 'another-project'
        self.assertFalse(other.can(device.LIST, fatal=False))
        self.assertEqual(3, len(self.evaluated))

    def test_decisions_are_forgotten_at_the_next_look(self):
        admin = make_context(['admin'])
        admin.can(device.LIST)
        self.now += policies.RELOAD_INTERVAL
        admin.can(device.LIST)
        self.assertEqual(2, len(self.evaluated))

    def test_new_rules_are_decided_afresh(self):
        admin = make_context(['admin'])
        self.assertTrue(admin.can(device.LIST))
        policies._enforcer().set_rules(policy.Rules.from_dict(
            {device.LIST: '!'}), overwrite=False)
        self.assertFalse(admin.can(device.LIST, fatal=False))

    def test_a_value_that_cannot_be_a_key_is_decided_every_time(self):
        admin = make_context(['admin'])
        target = {'project_id': admin.project_id, 'tags': {'a': 'b'}}
        for _ in range(2):
            self.assertTrue(admin.can(device.LIST, target))
        self.assertEqual(2, len(self.evaluated))


class TestIsAdminDecidedWhenRead(PolicyTestCase):
    """The API leaves is_admin undecided: the context_is_admin rule runs
    when something reads it, once."""

    def test_undecided_is_the_rules_answer(self):
        for roles, expected in ((['admin'], True), (['member'], False),
                                (['reader', 'manager'], False)):
            context = make_context(roles)
            context.is_admin = None
            self.assertIs(expected, context.is_admin)
            # What an RPC call carries is the decision.
            self.assertIs(expected, context.to_dict()['is_admin'])

    def test_the_rule_runs_once_and_only_when_read(self):
        checks = []
        real = policies.check_is_admin

        def counted(context):
            checks.append(context)
            return real(context)
        self.useFixture(fixtures.MonkeyPatch(
            'cyborg.policies.check_is_admin', counted))
        context = make_context(['admin'])
        context.is_admin = None
        self.assertTrue(context.can(device.LIST))
        self.assertEqual([], checks)
        self.assertTrue(context.is_admin)
        self.assertTrue(context.is_admin)
        self.assertEqual([context], checks)


class TestHandedInConfiguration(base.TestCase):

    def setUp(self):
        super().setUp()
        policy_opts.set_defaults(conf.CONF)
        self.addCleanup(policies.reset)

    def _policy_file(self, text):
        path = self.useFixture(fixtures.TempDir()).join('policy.yaml')
        with open(path, 'w') as rules_file:
            rules_file.write(text)
        return path

    def test_a_check_before_init_is_an_error(self):
        self.useFixture(fixtures.MonkeyPatch('cyborg.policies._CONFIG', None))
        policies.reset()

        self.assertRaises(policies.EnforcerNotInitialized,
                          make_context(['admin']).can, device.LIST)
        self.assertRaises(policies.EnforcerNotInitialized,
                          policies.check_is_admin, make_context(['admin']))

    def test_rules_are_read_with_the_configuration_handed_in(self):
        own = cfg.ConfigOpts()
        own([], project='cyborg', default_config_files=[])
        policies.init(own)
        own.set_override(
            'policy_file', self._policy_file(
                '"cyborg:device:get_all": "role:reader"\n'),
            group='oslo_policy')
        policies.reset()

        self.assertTrue(make_context(['reader']).can(device.LIST))
        # cyborg.conf.CONF, not handed in, is not read.
        self.assertEqual('policy.yaml', conf.CONF.oslo_policy.policy_file)

    def test_get_enforcer_reads_the_config_files_of_the_command_line(self):
        directory = self.useFixture(fixtures.TempDir()).path
        config_file = os.path.join(directory, 'cyborg.conf')
        with open(config_file, 'w') as config:
            config.write('[oslo_policy]\npolicy_file = %s\n' % self._policy_file(
                '"cyborg:device:get_all": "role:reader"\n'))

        enforcer = policies.get_enforcer(
            ['--namespace', 'cyborg', '--config-file', config_file])
        enforcer.load_rules()

        self.assertEqual('role:reader',
                         str(enforcer.rules['cyborg:device:get_all']))
        self.assertIsNot(conf.CONF, enforcer.conf)
