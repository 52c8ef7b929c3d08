"""Run upstream's API tests (cyborg-tempest-plugin) against cyborg.

Started by tools/run-tempest.sh with .venv's Python; tempest itself runs
from its own virtualenv (``--tempest-venv``). It brings up the deployment
of ``deploy.py``, writes tempest.conf, runs
``tempest run --regex cyborg_tempest_plugin.tests.api`` once with the
default policy and once with ``[oslo_policy] enforce_new_defaults = True``
(cyborg restarted in between), prints a summary and exits 1 when a run
breaks the rule of ``results.py``. Everything is torn down in every case;
the logs, tempest.conf and the subunit streams stay in ``--work-dir`` when
something failed (or always, when the directory is given).
"""

import argparse
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from cyborg import objects
from cyborg.tests.fixtures import keystone

import deploy
import results

TEST_REGEX = 'cyborg_tempest_plugin.tests.api'
RUNS = (('default policy', False), ('enforce_new_defaults', True))

LOG = logging.getLogger('run-tempest')


def tempest_conf(deployment, enforce_new_defaults, log_file):
    """tempest.conf's text for this deployment."""
    admin = deployment.keystone.admin
    groups = {
        'DEFAULT': {'log_file': log_file, 'debug': True},
        'auth': {
            'use_dynamic_credentials': True,
            'admin_username': admin.username,
            'admin_password': admin.password,
            'admin_project_name': admin.project_name,
            'admin_domain_name': 'Default',
            'create_isolated_networks': False,
        },
        'identity': {
            'uri_v3': deployment.keystone.auth_url,
            'auth_version': 'v3',
            'region': keystone.REGION,
            'v3_endpoint_type': 'public',
        },
        'identity-feature-enabled': {'api_v2': False},
        # Only cyborg here: nothing else of OpenStack is asked for.
        'service_available': {
            'cyborg': True, 'nova': False, 'neutron': False,
            'glance': False, 'cinder': False, 'swift': False,
            'horizon': False,
        },
        'cyborg_policy': {'enforce_new_defaults': enforce_new_defaults},
    }
    lines = []
    for group, options in groups.items():
        lines.append('[%s]' % group)
        lines.extend('%s = %s' % item for item in options.items())
        lines.append('')
    return '\n'.join(lines)


def run_tempest(tempest_venv, workspace, concurrency):
    """``tempest run`` in ``workspace``; its subunit stream (bytes)."""
    tempest = os.path.join(tempest_venv, 'bin', 'tempest')
    stestr = os.path.join(tempest_venv, 'bin', 'stestr')
    command = [tempest, 'run', '--regex', TEST_REGEX,
               '--concurrency', str(concurrency)]
    LOG.info('running %s in %s', ' '.join(command), workspace)
    process = subprocess.Popen(command, cwd=workspace,
                               start_new_session=True)
    try:
        process.wait()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    # tempest's own exit code is not the verdict: the expected failures
    # make it non-zero. The stream says what each test did.
    last = subprocess.run([stestr, 'last', '--subunit'], cwd=workspace,
                          capture_output=True, check=False)
    return last.stdout


def init_workspace(tempest_venv, path):
    """A tempest workspace at ``path`` (etc/, .stestr.conf)."""
    tempest = os.path.join(tempest_venv, 'bin', 'tempest')
    subprocess.run([tempest, 'init', '--name', os.path.basename(path),
                    '--workspace-path', os.path.join(path, 'workspaces.yaml'),
                    path], check=True, capture_output=True)


def one_run(deployment, name, enforce_new_defaults, args, expected):
    """Start cyborg, run tempest once; its Verdict."""
    slug = name.replace(' ', '-')
    workspace = os.path.join(args.work_dir, slug)
    init_workspace(args.tempest_venv, workspace)
    conf_path = os.path.join(workspace, 'etc', 'tempest.conf')
    with open(conf_path, 'w') as conf_file:
        conf_file.write(tempest_conf(deployment, enforce_new_defaults,
                                     os.path.join(workspace, 'tempest.log')))
    started = time.monotonic()
    deployment.start(enforce_new_defaults)
    LOG.info('cyborg up with enforce_new_defaults=%s in %.0f s',
             enforce_new_defaults, time.monotonic() - started)
    stream = run_tempest(args.tempest_venv, workspace, args.concurrency)
    with open(os.path.join(args.work_dir, slug + '.subunit'), 'wb') as out:
        out.write(stream)
    verdict = results.judge(name, results.read_subunit(stream), expected)
    LOG.info('%s: tempest took %.0f s', name, time.monotonic() - started)
    return verdict


def write_logs(deployment, work_dir):
    for script, logs in deployment.logs.items():
        for number, text in enumerate(logs, 1):
            path = os.path.join(work_dir, '%s-%d.log' % (script, number))
            with open(path, 'w', encoding='utf-8') as log_file:
                log_file.write(text)


def _terminate_on_sigterm():
    """SIGTERM unwinds like Ctrl-C, so the teardown runs."""
    def handler(signum, frame):
        raise KeyboardInterrupt('SIGTERM')
    signal.signal(signal.SIGTERM, handler)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--tempest-venv', required=True,
                        help='virtualenv holding tempest and the plugin')
    parser.add_argument('--work-dir',
                        help='where tempest.conf, logs and results go; '
                             'kept (default: a temporary directory, '
                             'removed when every run is as expected)')
    parser.add_argument('--concurrency', type=int, default=1,
                        help='tempest workers (default 1: Keystone runs on SQLite)')
    parser.add_argument('--backend', default='mysql',
                        choices=('mysql', 'postgresql', 'sqlite'),
                        help="cyborg's database (default mysql: MariaDB)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    keep = bool(args.work_dir)
    args.work_dir = os.path.abspath(
        args.work_dir or tempfile.mkdtemp(prefix='cyborg-tempest-'))
    os.makedirs(args.work_dir, exist_ok=True)
    args.tempest_venv = os.path.abspath(args.tempest_venv)
    # The libraries of the fixtures (Keystone's above all) are chatty.
    logging.basicConfig(level=logging.WARNING, stream=sys.stdout,
                        format='%(asctime)s %(name)s: %(message)s')
    LOG.setLevel(logging.INFO)
    _terminate_on_sigterm()
    objects.register_all()
    expected = results.load_expected_failures()
    verdicts = []
    deployment = deploy.Deployment(backend=args.backend)
    failed = True
    try:
        with deployment:
            LOG.info('Keystone %s, Placement %s, database %s, RabbitMQ '
                     'virtual host %s; all removed at the end',
                     deployment.keystone.auth_url,
                     deployment.placement.endpoint,
                     deployment.database.url.rsplit('/', 1)[-1],
                     deployment.rabbit.virtual_host)
            for name, enforce_new_defaults in RUNS:
                try:
                    verdicts.append(one_run(deployment, name,
                                            enforce_new_defaults, args,
                                            expected))
                finally:
                    deployment.stop()
        failed = not verdicts or not all(v.ok for v in verdicts) \
            or len(verdicts) != len(RUNS)
    finally:
        with contextlib.suppress(OSError):
            write_logs(deployment, args.work_dir)
        print()
        print('=== upstream API tests (%s) ===' % TEST_REGEX)
        for verdict in verdicts:
            print(verdict.summary())
        if failed:
            print('tempest.conf, logs and subunit streams: %s' % args.work_dir)
        elif not keep:
            shutil.rmtree(args.work_dir, ignore_errors=True)
    return 1 if failed else 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except KeyboardInterrupt as interrupt:
        # Everything was torn down on the way out.
        print('interrupted (%s)' % (interrupt or 'Ctrl-C'), file=sys.stderr)
        sys.exit(130)
