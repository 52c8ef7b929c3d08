"""The DevStack plugin (devstack/), run in bash with stubbed DevStack functions.

DevStack itself is not here: each of its functions the plugin calls is a
shell function that records its arguments, and ``iniset`` (in awk) writes
a real ini file, so the tests read back the cyborg.conf the plugin writes
and the commands it runs. The plugin's own commands (cyborg-dbsync, uwsgi) are
stand-in executables that record how they were called.
"""

import configparser
import json
import os
import re
import stat
import subprocess
import sys
import textwrap

import fixtures
from keystoneauth1 import loading as ks_loading

from cyborg.tests import base

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
DEVSTACK = os.path.join(REPO, 'devstack')
SAMPLE_CONFIG = os.path.join(REPO, 'etc', 'cyborg', 'cyborg.conf.sample')
SETUP_CFG = os.path.join(REPO, 'setup.cfg')

SERVICE_HOST = '192.0.2.10'
TRANSPORT_URL = 'rabbit://stackrabbit:secretrabbit@%s:5672/' % SERVICE_HOST
DATABASE_URL = 'mysql+pymysql://root:secretdb@%s/cyborg?charset=utf8' % SERVICE_HOST
KEYSTONE_URL = 'http://%s/identity' % SERVICE_HOST

# DevStack's phases in the order stack.sh, unstack.sh and clean.sh run them.
STACK_PHASES = ('stack pre-install', 'stack install', 'stack post-config',
                'stack extra', 'stack test-config')
ALL_PHASES = STACK_PHASES + ('unstack', 'clean')

# The DevStack functions the plugin calls. Each records its name and
# arguments, one line per call, separated by tabs.
STUBS = textwrap.dedent('''
    function record {
        local name=$1
        shift
        {
            printf '%s' "$name"
            printf '\\t%s' "$@"
            printf '\\n'
        } >> $STUB_LOG
    }
    function is_service_enabled {
        local service
        for service in "$@"; do
            [[ ,$ENABLED_SERVICES, == *,$service,* ]] && return 0
        done
        return 1
    }
    function enable_service {
        local service
        for service in "$@"; do
            [[ ,$DISABLED_SERVICES, == *,$service,* ]] && continue
            is_service_enabled $service || ENABLED_SERVICES+=,$service
        done
    }
    function trueorfalse {
        local value=${!2:-}
        case ${value,,} in
            1|yes|true|on) echo True ;;
            0|no|false|off) echo False ;;
            *) echo $1 ;;
        esac
    }
    function get_python_exec_prefix { echo $STUB_BIN; }
    function echo_summary { :; }
    function die { echo "die: $*" >&2; exit 1; }
    function sudo { record sudo "$@"; "$@"; }
    # As DevStack's: one "key = value" line per key, a new key at the end
    # of its section, a new section at the end of the file.
    function iniset {
        record iniset "$@"
        local file=$1 section=$2 key=$3 value=$4
        touch $file
        awk -v header="[$section]" -v key="$key" -v value="$value" '
            $0 == header { inside = 1; print; next }
            /^\\[/ {
                if (inside && !done) { print key " = " value; done = 1 }
                inside = 0
            }
            inside && index($0, key " = ") == 1 {
                if (!done) { print key " = " value; done = 1 }
                next
            }
            { print }
            END {
                if (!done) {
                    if (!inside) print header
                    print key " = " value
                }
            }' $file > $file.new
        mv $file.new $file
    }
    function iniset_rpc_backend {
        record iniset_rpc_backend "$@"
        iniset $2 ${3:-DEFAULT} transport_url $STUB_TRANSPORT_URL
    }
    function database_connection_url { echo $STUB_DATABASE_URL; }
    function configure_keystone_authtoken_middleware {
        record configure_keystone_authtoken_middleware "$@"
        local section=${3:-keystone_authtoken}
        iniset $1 $section auth_type password
        iniset $1 $section www_authenticate_uri $KEYSTONE_SERVICE_URI
        iniset $1 $section auth_url $KEYSTONE_SERVICE_URI
        iniset $1 $section username $2
        iniset $1 $section password $SERVICE_PASSWORD
        iniset $1 $section user_domain_name $SERVICE_DOMAIN_NAME
        iniset $1 $section project_name $SERVICE_PROJECT_NAME
        iniset $1 $section project_domain_name $SERVICE_DOMAIN_NAME
        iniset $1 $section region_name $REGION_NAME
        iniset $1 $section memcached_servers localhost:11211
    }
    for stub in write_uwsgi_config remove_uwsgi_config run_process \\
            stop_process create_service_user get_or_add_user_project_role \\
            get_or_create_service get_or_create_endpoint recreate_database \\
            setup_develop install_package pip_install; do
        eval "function $stub { record $stub \\"\\$@\\"; }"
    done
    function get_or_create_role { record get_or_create_role "$@"; echo role-id-$1; }
''')

# A stand-in for a command the plugin runs: records its name and arguments.
STAND_IN = textwrap.dedent('''\
    #!/bin/bash
    {
        printf 'exec\\t%s' "$(basename "$0")"
        printf '\\t%s' "$@"
        printf '\\n'
    } >> $STUB_LOG
''')


def read_ini(path):
    """{section: {key: value}} of an ini file, without DEFAULT inheritance."""
    sections = {}
    current = None
    with open(path) as ini:
        for line in ini:
            line = line.strip()
            if line.startswith('['):
                current = sections.setdefault(line[1:-1], {})
            elif ' = ' in line:
                key, _, value = line.partition(' = ')
                current[key] = value
    return sections


def sample_options():
    """{section: {option names}} of etc/cyborg/cyborg.conf.sample."""
    options = {}
    section = None
    with open(SAMPLE_CONFIG) as sample:
        for line in sample:
            header = re.match(r'^\[(.+)\]$', line)
            if header:
                section = options.setdefault(header.group(1), set())
                continue
            option = re.match(r'^#([a-z0-9_]+) = ', line)
            if option:
                section.add(option.group(1))
    # keystonemiddleware loads the auth plugin's options at run time, so
    # the sample does not list them.
    options['keystone_authtoken'] |= {
        opt.dest for opt in ks_loading.get_auth_plugin_conf_options('password')}
    return options


def console_scripts():
    """The console script names setup.cfg installs."""
    parser = configparser.ConfigParser()
    parser.read(SETUP_CFG)
    lines = parser['entry_points']['console_scripts'].strip().splitlines()
    return {line.split('=')[0].strip() for line in lines}


class DevStackRun(fixtures.Fixture):
    """Sources devstack/settings and runs devstack/plugin.sh phase by phase.

    ``environment`` adds or overrides DevStack's variables. After ``run``,
    ``calls`` are the recorded calls (lists of words) and ``config`` the
    cyborg.conf written, or None when there is none.
    """

    def __init__(self, environment=None):
        super().__init__()
        self.environment = environment or {}

    def _setUp(self):
        self.root = self.useFixture(fixtures.TempDir()).path
        self.bin = os.path.join(self.root, 'bin')
        os.mkdir(self.bin)
        for command in ('cyborg-dbsync', 'uwsgi'):
            path = os.path.join(self.bin, command)
            with open(path, 'w') as script:
                script.write(STAND_IN)
            os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        self.log = os.path.join(self.root, 'calls.log')
        self.conf_dir = os.path.join(self.root, 'etc', 'cyborg')
        self.conf_file = os.path.join(self.conf_dir, 'cyborg.conf')
        self.tempest_conf = os.path.join(self.root, 'tempest.conf')
        with open(os.path.join(self.root, 'stubs.sh'), 'w') as stubs:
            stubs.write(STUBS)

    def env(self):
        environment = {
            'PATH': '%s:%s' % (self.bin, os.environ['PATH']),
            'HOME': self.root,
            'STUB_LOG': self.log,
            'STUB_BIN': self.bin,
            'STUB_TRANSPORT_URL': TRANSPORT_URL,
            'STUB_DATABASE_URL': DATABASE_URL,
            'DEST': os.path.join(self.root, 'opt'),
            'DATA_DIR': os.path.join(self.root, 'data'),
            'STACK_USER': subprocess.run(
                ['id', '-un'], capture_output=True, text=True,
                check=True).stdout.strip(),
            'SERVICE_HOST': SERVICE_HOST,
            'SERVICE_PROTOCOL': 'http',
            'REGION_NAME': 'RegionOne',
            'SERVICE_PASSWORD': 'secretservice',
            'SERVICE_PROJECT_NAME': 'service',
            'SERVICE_DOMAIN_NAME': 'Default',
            'KEYSTONE_SERVICE_URI': KEYSTONE_URL,
            'LOCAL_HOSTNAME': 'compute-1',
            'SYSLOG': 'False',
            'TEMPEST_CONFIG': self.tempest_conf,
            'CYBORG_CONF_DIR': self.conf_dir,
            'CYBORG_STATE_PATH': os.path.join(self.root, 'state'),
            'ENABLED_SERVICES': 'key,mysql,rabbit,placement-api,g-api,n-api,tempest',
            'DISABLED_SERVICES': '',
        }
        environment.update(self.environment)
        return environment

    def run(self, phases=ALL_PHASES):
        """Run ``phases`` in one shell, as stack.sh does, with errexit on."""
        script = ['set -o errexit', 'source %s/stubs.sh' % self.root,
                  'source %s/settings' % DEVSTACK]
        script += ['source %s/plugin.sh %s' % (DEVSTACK, phase)
                   for phase in phases]
        result = subprocess.run(['bash', '-c', '\n'.join(script)],
                                env=self.env(), capture_output=True,
                                text=True, timeout=60, cwd=self.root)
        if result.returncode:
            raise AssertionError('the plugin failed (%d):\n%s%s' % (
                result.returncode, result.stdout, result.stderr))
        self.calls = []
        if os.path.exists(self.log):
            with open(self.log) as log:
                self.calls = [line.rstrip('\n').split('\t') for line in log]
        self.config = (read_ini(self.conf_file)
                       if os.path.exists(self.conf_file) else None)
        return self.calls

    def called(self, name):
        """The argument lists of every call of ``name``."""
        return [call[1:] for call in self.calls if call[0] == name]


class TestSyntax(base.TestCase):

    def test_every_file_under_devstack_parses_in_bash(self):
        checked = []
        for directory, _, files in os.walk(DEVSTACK):
            for name in files:
                path = os.path.join(directory, name)
                result = subprocess.run(['bash', '-n', path],
                                        capture_output=True, text=True)
                self.assertEqual(0, result.returncode,
                                 '%s: %s' % (path, result.stderr))
                checked.append(os.path.relpath(path, DEVSTACK))
        self.assertEqual(['lib/cyborg', 'plugin.sh', 'settings'],
                         sorted(checked))


class TestController(base.TestCase):
    """All of cyborg on one node, the API under uWSGI at /accelerator."""

    def setUp(self):
        super().setUp()
        self.devstack = self.useFixture(DevStackRun())
        self.devstack.run(STACK_PHASES)
        self.config = self.devstack.config

    def test_every_option_written_is_one_cyborg_knows(self):
        known = sample_options()
        for section, options in self.config.items():
            self.assertIn(section, known)
            unknown = set(options) - known[section]
            self.assertEqual(set(), unknown, '[%s]' % section)

    def test_database_and_message_bus(self):
        self.assertEqual(DATABASE_URL, self.config['database']['connection'])
        self.assertEqual(TRANSPORT_URL, self.config['DEFAULT']['transport_url'])
        self.assertEqual(['cyborg', self.devstack.conf_file, 'DEFAULT'],
                         self.devstack.called('iniset_rpc_backend')[0])
        self.assertEqual('compute-1', self.config['DEFAULT']['host'])

    def test_api_authenticates_with_keystone(self):
        self.assertEqual('keystone', self.config['DEFAULT']['auth_strategy'])
        authtoken = self.config['keystone_authtoken']
        self.assertEqual('cyborg', authtoken['username'])
        self.assertEqual(KEYSTONE_URL, authtoken['www_authenticate_uri'])
        self.assertEqual('True', authtoken['service_token_roles_required'])

    def test_service_clients_use_the_cyborg_user(self):
        for section in ('placement', 'nova', 'glance', 'service_user'):
            options = self.config[section]
            self.assertEqual('password', options['auth_type'], section)
            self.assertEqual(KEYSTONE_URL, options['auth_url'], section)
            self.assertEqual('cyborg', options['username'], section)
            self.assertEqual('secretservice', options['password'], section)
            self.assertEqual('service', options['project_name'], section)
        self.assertEqual('RegionOne', self.config['placement']['region_name'])
        self.assertEqual('RegionOne', self.config['glance']['region_name'])
        self.assertEqual('True',
                         self.config['service_user']['send_service_user_token'])

    def test_policy_file_and_new_defaults(self):
        policy = self.config['oslo_policy']
        self.assertEqual(os.path.join(self.devstack.conf_dir, 'policy.yaml'),
                         policy['policy_file'])
        self.assertTrue(os.path.exists(policy['policy_file']))
        self.assertEqual('True', policy['enforce_new_defaults'])

    def test_agent_loads_the_fake_driver(self):
        self.assertEqual({'enabled_drivers': 'fake_driver'},
                         self.config['agent'])

    def test_api_is_mounted_at_accelerator_under_uwsgi(self):
        uwsgi_conf = os.path.join(self.devstack.conf_dir,
                                  'cyborg-api-uwsgi.ini')
        self.assertEqual(
            [[uwsgi_conf, 'cyborg.wsgi.api:application', '/accelerator', '',
              'cyborg-api']],
            self.devstack.called('write_uwsgi_config'))
        self.assertEqual(
            'OS_CYBORG_CONFIG_FILES=%s' % self.devstack.conf_file,
            read_ini(uwsgi_conf)['uwsgi']['env'])
        self.assertEqual('http://%s/accelerator' % SERVICE_HOST,
                         self.config['api']['public_endpoint'])
        # uWSGI binds no port of its own: Apache proxies /accelerator to it.
        self.assertNotIn('port', self.config['api'])

    def test_service_user_and_endpoint_below_v2(self):
        self.assertEqual([['cyborg', 'admin']],
                         self.devstack.called('create_service_user'))
        self.assertEqual([['role-id-service', 'cyborg', 'service']],
                         self.devstack.called('get_or_add_user_project_role'))
        self.assertEqual([['cyborg', 'accelerator', 'Accelerator service']],
                         self.devstack.called('get_or_create_service'))
        self.assertEqual(
            [['accelerator', 'RegionOne',
              'http://%s/accelerator/v2' % SERVICE_HOST]],
            self.devstack.called('get_or_create_endpoint'))

    def test_database_is_created_then_migrated(self):
        names = [call[0] if call[0] != 'exec' else call[1]
                 for call in self.devstack.calls]
        self.assertLess(names.index('recreate_database'),
                        names.index('cyborg-dbsync'))
        self.assertEqual([['cyborg']],
                         self.devstack.called('recreate_database'))
        self.assertIn(['exec', 'cyborg-dbsync', '--config-file',
                       self.devstack.conf_file, 'upgrade'],
                      self.devstack.calls)
        self.assertIn('cyborg-dbsync', console_scripts())

    def test_services_run_as_units_with_real_console_scripts(self):
        processes = dict(self.devstack.called('run_process'))
        self.assertEqual({'cyborg-api', 'cyborg-cond', 'cyborg-agent'},
                         set(processes))
        scripts = console_scripts()
        for service, script in (('cyborg-cond', 'cyborg-conductor'),
                                ('cyborg-agent', 'cyborg-agent')):
            self.assertIn(script, scripts)
            self.assertEqual(
                '%s/%s --config-file %s' % (self.devstack.bin, script,
                                            self.devstack.conf_file),
                processes[service])
        self.assertEqual(
            '%s/uwsgi --procname-prefix cyborg-api --ini %s' % (
                self.devstack.bin, os.path.join(self.devstack.conf_dir,
                                                'cyborg-api-uwsgi.ini')),
            processes['cyborg-api'])

    def test_tempest_is_told_cyborg_is_there(self):
        tempest = read_ini(self.devstack.tempest_conf)
        self.assertEqual('True', tempest['service_available']['cyborg'])
        self.assertEqual('True',
                         tempest['cyborg_policy']['enforce_new_defaults'])

    def test_installs_the_checkout(self):
        self.assertEqual([[REPO]], self.devstack.called('setup_develop'))


class TestUnstackAndClean(base.TestCase):

    def test_stops_the_services_and_removes_the_configuration(self):
        devstack = self.useFixture(DevStackRun())
        devstack.run(ALL_PHASES)
        self.assertEqual([['cyborg-api'], ['cyborg-cond'], ['cyborg-agent']],
                         devstack.called('stop_process'))
        self.assertEqual(
            [[os.path.join(devstack.conf_dir, 'cyborg-api-uwsgi.ini'),
              'cyborg-api']],
            devstack.called('remove_uwsgi_config'))
        self.assertFalse(os.path.exists(devstack.conf_dir))


class TestOptions(base.TestCase):

    def test_api_on_its_own_port_without_uwsgi(self):
        devstack = self.useFixture(DevStackRun({'CYBORG_USE_UWSGI': 'False'}))
        devstack.run(STACK_PHASES)
        self.assertEqual([], devstack.called('write_uwsgi_config'))
        processes = dict(devstack.called('run_process'))
        self.assertEqual('%s/cyborg-api --config-file %s'
                         % (devstack.bin, devstack.conf_file),
                         processes['cyborg-api'])
        self.assertIn('cyborg-api', console_scripts())
        self.assertEqual({'host_ip': SERVICE_HOST, 'port': '6666',
                          'public_endpoint': 'http://%s:6666' % SERVICE_HOST},
                         devstack.config['api'])
        self.assertEqual(
            [['accelerator', 'RegionOne', 'http://%s:6666/v2' % SERVICE_HOST]],
            devstack.called('get_or_create_endpoint'))

    def test_drivers_inventory_and_old_policy_defaults(self):
        devstack = self.useFixture(DevStackRun({
            'CYBORG_ENABLED_DRIVERS': 'fake_driver,pci_driver',
            'CYBORG_FAKE_INVENTORY': '/opt/stack/cyborg/cyborg/aio/fleet.yaml',
            'CYBORG_ENFORCE_NEW_DEFAULTS': 'false'}))
        devstack.run(STACK_PHASES)
        self.assertEqual(
            {'enabled_drivers': 'fake_driver,pci_driver',
             'fake_inventory': '/opt/stack/cyborg/cyborg/aio/fleet.yaml'},
            devstack.config['agent'])
        self.assertEqual('False',
                         devstack.config['oslo_policy']['enforce_new_defaults'])
        self.assertEqual('False', read_ini(devstack.tempest_conf)[
            'cyborg_policy']['enforce_new_defaults'])

    def test_without_glance_and_nova_their_sections_are_left_out(self):
        devstack = self.useFixture(DevStackRun(
            {'ENABLED_SERVICES': 'key,placement-api'}))
        devstack.run(STACK_PHASES)
        self.assertNotIn('glance', devstack.config)
        self.assertNotIn('nova', devstack.config)
        self.assertFalse(os.path.exists(devstack.tempest_conf))

    def test_api_without_placement_stops_the_install(self):
        devstack = self.useFixture(DevStackRun({'ENABLED_SERVICES': 'key'}))
        error = self.assertRaises(AssertionError, devstack.run, STACK_PHASES)
        self.assertIn('placement-api', str(error))


class TestComputeNode(base.TestCase):
    """A node that runs the agent only (cyborg-api and -cond disabled)."""

    def setUp(self):
        super().setUp()
        self.devstack = self.useFixture(DevStackRun({
            'ENABLED_SERVICES': 'g-api',
            'DISABLED_SERVICES': 'cyborg-api,cyborg-cond'}))
        self.devstack.run(STACK_PHASES)

    def test_only_the_agent_runs(self):
        self.assertEqual(['cyborg-agent'],
                         [call[0] for call in
                          self.devstack.called('run_process')])

    def test_no_database_accounts_or_uwsgi(self):
        for name in ('recreate_database', 'create_service_user',
                     'get_or_create_endpoint', 'write_uwsgi_config'):
            self.assertEqual([], self.devstack.called(name), name)
        self.assertNotIn(['exec', 'cyborg-dbsync'],
                         [call[:2] for call in self.devstack.calls])

    def test_agent_configuration(self):
        config = self.devstack.config
        self.assertEqual(TRANSPORT_URL, config['DEFAULT']['transport_url'])
        self.assertEqual('fake_driver', config['agent']['enabled_drivers'])
        self.assertEqual('cyborg', config['glance']['username'])
        for section in ('database', 'keystone_authtoken', 'placement', 'api'):
            self.assertNotIn(section, config)


class TestUwsgiApplication(base.TestCase):
    """``cyborg.wsgi.api:application``, the module path uWSGI is given."""

    def test_links_and_versions_below_the_mount_point(self):
        devstack = self.useFixture(DevStackRun())
        devstack.run(STACK_PHASES)
        # Tokens are not the point here: noauth on top of the plugin's file.
        override = os.path.join(devstack.root, 'noauth.conf')
        with open(override, 'w') as out:
            out.write('[DEFAULT]\nauth_strategy = noauth\n')
        (uwsgi_conf, module_path, mount_point, _,
         _) = devstack.called('write_uwsgi_config')[0]
        # As uWSGI loads its ``module = package.module:name``: import the
        # module, take the name from its namespace, and call it with the
        # mount point as SCRIPT_NAME.
        script = textwrap.dedent('''
            import importlib
            import json
            import sys
            import webob

            module_name, _, name = sys.argv[1].partition(':')
            application = vars(importlib.import_module(module_name))[name]
            answers = {}
            for path in ('/', '/v2'):
                request = webob.Request.blank(
                    path, environ={'SCRIPT_NAME': sys.argv[2]})
                response = request.get_response(application)
                answers[path] = [response.status_int, response.json_body]
            print(json.dumps(answers))
        ''')
        # The configuration files the uWSGI ini hands the application.
        variable, _, files = read_ini(uwsgi_conf)['uwsgi']['env'].partition('=')
        environ = dict(os.environ)
        environ[variable] = '%s;%s' % (files, override)
        result = subprocess.run([sys.executable, '-c', script, module_path,
                                 mount_point], env=environ,
                                capture_output=True, text=True, timeout=60,
                                cwd=devstack.root)
        self.assertEqual(0, result.returncode, result.stderr)
        answers = json.loads(result.stdout.strip().splitlines()[-1])
        status, root = answers['/']
        self.assertEqual(200, status)
        base_url = 'http://%s/accelerator' % SERVICE_HOST
        self.assertEqual(base_url + '/v2',
                         root['versions'][0]['links'][0]['href'])
        status, version = answers['/v2']
        self.assertEqual(200, status)
        self.assertEqual('v2.0', version['id'])
        self.assertEqual(base_url + '/v2/', version['links'][0]['href'])
