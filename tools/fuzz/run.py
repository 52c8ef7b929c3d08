"""Fuzz the API with schemathesis on the all-in-one and on the processes.

Started by tools/run-fuzz.sh with .venv's Python; schemathesis runs from
its own virtualenv (``--fuzz-venv``). For each deployment of
``targets.py`` (the all-in-one; cyborg-api, -conductor and -agent on
MariaDB in noauth mode, then behind Keystone): start it, seed it (device
profiles, ARQs, an attribute), fetch the OpenAPI document it serves, run
``st run`` on it with ``schemathesis.toml`` (every operation, valid and
invalid requests; no 5xx, status codes, content types, headers and bodies
as documented; the known differences of ``hooks.py`` dropped and
counted), then read back every page of every list and each listed item,
at the oldest and newest microversion, against the document (no stored
poison). Prints a summary and exits 1 on any failure. The reports and
logs stay in ``--work-dir`` when something failed (or always, when it is
given); ``--seed`` replays a run.
"""

import argparse
import collections
import json
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import targets

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIG = os.path.join(HERE, 'schemathesis.toml')
HOOKS = os.path.join(HERE, 'hooks.py')
DEPLOYMENTS = ('aio', 'processes', 'keystone')

LOG = logging.getLogger('run-fuzz')


class Outcome:
    """What one fuzzing run of one deployment found."""

    def __init__(self, name):
        self.name = name
        self.report = None
        self.stored_problems = []
        self.dropped = collections.Counter()
        self.error = None
        self.seconds = 0.0

    @property
    def failures(self):
        """The failures schemathesis reported (as its JSON report has them)."""
        return (self.report or {}).get('failures', [])

    @property
    def ok(self):
        """Whether the run finished with nothing found."""
        report = self.report or {}
        return (self.error is None and self.report is not None
                and not self.failures and not report.get('errors')
                and not self.stored_problems
                and report.get('operations', {}).get('errored', 0) == 0)

    def summary(self):
        """Lines for the summary of the run."""
        report = self.report or {}
        operations = report.get('operations', {})
        cases = report.get('test_cases', {})
        lines = ['%s: %s in %.0f s' % (self.name, 'OK' if self.ok
                                       else 'FAILED', self.seconds)]
        if self.report is not None:
            lines.append(
                '  operations: %d tested of %d (%d errored); examples: %d '
                'generated; failures: %d unique in %d test cases (%d known '
                'differences dropped by tools/fuzz/hooks.py); stopped: %s'
                % (operations.get('tested', 0), operations.get('total', 0),
                   operations.get('errored', 0), cases.get('generated', 0),
                   cases.get('unique_failures', 0),
                   cases.get('with_failures', 0),
                   sum(self.dropped.values()), report.get('stop_reason')))
        if self.dropped:
            lines.append('  known differences: %s' % ', '.join(
                '%s %d' % item for item in sorted(self.dropped.items())))
        for failure in self.failures:
            lines.append('  - %s' % _describe(failure))
        for error in report.get('errors', []):
            lines.append('  - error: %s' % json.dumps(error)[:300])
        for problem in self.stored_problems:
            lines.append('  - after the run: %s' % problem)
        if self.error is not None:
            lines.append('  - %s' % self.error)
        return lines


def _describe(failure):
    """One line for a failure of schemathesis' JSON report."""
    if not isinstance(failure, dict):
        return str(failure)[:300]
    return '%s (%s) x%s: %s' % (failure.get('title'), failure.get('code'),
                                failure.get('count'),
                                ', '.join(failure.get('operations', ())))


def run_schemathesis(args, target, document_path, report_dir, max_time):
    """``st run`` against ``target``; its JSON report (a dict)."""
    command = [os.path.join(args.fuzz_venv, 'bin', 'st'),
               '--config-file', CONFIG, 'run', document_path,
               '--url', target.api_root,
               '--max-examples', str(args.max_examples),
               '--max-time', str(max_time),
               '--seed', str(args.seed),
               '--workers', str(args.workers),
               '--report', 'json,junit', '--report-dir', report_dir,
               '--no-color']
    for name, value in target.headers.items():
        command += ['--header', '%s: %s' % (name, value)]
    LOG.info('fuzzing %s: %d examples per operation at most, %d s',
             target.name, args.max_examples, max_time)
    environ = dict(os.environ, SCHEMATHESIS_HOOKS=HOOKS,
                   CYBORG_FUZZ_DROPPED=os.path.join(report_dir,
                                                    'dropped.txt'))
    with open(os.path.join(report_dir, 'schemathesis.txt'), 'wb') as output:
        # In the report directory, where its state (.schemathesis) goes.
        process = subprocess.Popen(command, stdout=output,
                                   stderr=subprocess.STDOUT, env=environ,
                                   cwd=report_dir, start_new_session=True)
        try:
            # The budget is schemathesis' own; this only guards a hang.
            process.wait(timeout=max_time + 300)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    reports = [name for name in os.listdir(report_dir)
               if name.startswith('json') and name.endswith('.json')]
    if not reports:
        raise RuntimeError('schemathesis wrote no report (exit code %s); see '
                           '%s' % (process.returncode,
                                   os.path.join(report_dir,
                                                'schemathesis.txt')))
    with open(os.path.join(report_dir, sorted(reports)[-1])) as report:
        return json.load(report)


def dropped_counts(report_dir):
    """{rule of hooks.py: failures it dropped} of one run."""
    counts = collections.Counter()
    try:
        with open(os.path.join(report_dir, 'dropped.txt'),
                  encoding='utf-8') as dropped:
            counts.update(line.split(' ', 1)[0] for line in dropped)
    except FileNotFoundError:
        pass
    return counts


def fuzz(args, target, max_time, seed_data=True):
    """Seed ``target``, fuzz it for ``max_time`` seconds, read back what it
    stored: an Outcome."""
    outcome = Outcome(target.name)
    started = time.monotonic()
    report_dir = os.path.join(args.work_dir, target.name.replace(' ', '_')
                              .replace('(', '').replace(')', ''))
    os.makedirs(report_dir, exist_ok=True)
    try:
        document = targets.fetch_document(target)
        if seed_data:
            seeded = targets.seed(target)
            LOG.info('%s seeded: %s', target.name, ', '.join(
                '%d %s' % (len(rows), name) for name, rows in seeded.items()))
            document = targets.with_examples(document, seeded)
        document_path = os.path.join(report_dir, 'openapi.json')
        with open(document_path, 'w') as document_file:
            json.dump(document, document_file, indent=1)
        outcome.report = run_schemathesis(args, target, document_path,
                                          report_dir, max_time)
        outcome.dropped = dropped_counts(report_dir)
        outcome.stored_problems = targets.check_stored(
            target, targets.fetch_document(target))
    except Exception as error:
        LOG.exception('fuzzing %s failed', target.name)
        outcome.error = '%s: %s' % (type(error).__name__, error)
    finally:
        outcome.seconds = time.monotonic() - started
        for name, text in target.log_texts().items():
            with open(os.path.join(report_dir, name), 'w',
                      encoding='utf-8') as log_file:
                log_file.write(text)
    LOG.info('%s: %s', target.name, 'OK' if outcome.ok else 'FAILED')
    return outcome


def fuzz_all_in_one(args):
    """The all-in-one: one Outcome."""
    started = time.monotonic()
    with targets.AllInOne() as target:
        LOG.info('all-in-one up on %s in %.0f s', target.api_root,
                 time.monotonic() - started)
        return [fuzz(args, target, args.max_time)]


def fuzz_processes(args, with_keystone):
    """The processes, noauth then (if asked) behind Keystone: Outcomes."""
    outcomes = []
    started = time.monotonic()
    with targets.Processes(backend=args.backend) as deployment:
        deployment.start_api(keystone=False)
        LOG.info('processes up on %s (%s) in %.0f s', deployment.api_root,
                 args.backend, time.monotonic() - started)
        outcomes.append(fuzz(args, deployment, args.max_time))
        if with_keystone:
            deployment.stop()
            deployment.start_api(keystone=True)
            # The rows of the noauth run are there still; a shorter run
            # checks what differs: the token middleware in front.
            outcomes.append(fuzz(args, deployment,
                                 max(30, args.max_time // 3),
                                 seed_data=False))
    return outcomes


def _started(function, name, *arguments):
    """``function(*arguments)``'s Outcomes, or one telling why the
    deployment ``name`` could not be fuzzed."""
    try:
        return function(*arguments)
    except Exception as error:
        LOG.exception('%s could not be fuzzed', name)
        outcome = Outcome(name)
        outcome.error = 'not fuzzed: %s: %s' % (type(error).__name__, error)
        return [outcome]


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--fuzz-venv', required=True,
                        help='virtualenv holding schemathesis')
    parser.add_argument('--work-dir',
                        help='where the reports and logs go; kept (default: '
                             'a temporary directory, removed when nothing '
                             'was found)')
    parser.add_argument('--deployments', default='aio,processes,keystone',
                        help='comma-separated, of %s (default: all; '
                             'keystone is the processes behind Keystone, '
                             'run after noauth)' % ', '.join(DEPLOYMENTS))
    parser.add_argument('--max-examples', type=int, default=25,
                        help='test cases per operation and phase at most '
                             '(default 25)')
    parser.add_argument('--max-time', type=int, default=150,
                        help='seconds of fuzzing per deployment (default '
                             '150; a third of it behind Keystone)')
    parser.add_argument('--workers', type=int, default=1,
                        help='concurrent schemathesis workers (default 1: '
                             'hypothesis is not thread-safe on Python 3.11)')
    parser.add_argument('--seed', type=int,
                        help='schemathesis seed, to replay a run (default: '
                             'random, printed)')
    parser.add_argument('--backend', default='mysql',
                        choices=('mysql', 'postgresql', 'sqlite'),
                        help="the processes' database (default mysql: "
                             'MariaDB)')
    args = parser.parse_args(argv)
    args.deployments = [name.strip() for name in args.deployments.split(',')
                        if name.strip()]
    unknown = set(args.deployments) - set(DEPLOYMENTS)
    if unknown:
        parser.error('unknown deployments: %s' % ', '.join(sorted(unknown)))
    if 'keystone' in args.deployments and \
            'processes' not in args.deployments:
        parser.error('keystone runs on the processes: name both')
    if args.seed is None:
        args.seed = random.randrange(2 ** 32)  # noqa: S311 (a test seed)
    return args


def main(argv=None):
    args = parse_args(argv)
    keep = bool(args.work_dir)
    args.work_dir = os.path.abspath(
        args.work_dir or tempfile.mkdtemp(prefix='cyborg-fuzz-'))
    os.makedirs(args.work_dir, exist_ok=True)
    args.fuzz_venv = os.path.abspath(args.fuzz_venv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stdout,
                        format='%(asctime)s %(name)s: %(message)s')
    LOG.setLevel(logging.INFO)
    # SIGTERM unwinds like an exit, so every deployment is torn down.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
    from cyborg import objects
    objects.register_all()
    outcomes = []
    started = time.monotonic()
    try:
        if 'aio' in args.deployments:
            outcomes += _started(fuzz_all_in_one, 'all-in-one', args)
        if 'processes' in args.deployments:
            outcomes += _started(fuzz_processes, 'processes', args,
                                 'keystone' in args.deployments)
    finally:
        failed = not outcomes or not all(outcome.ok for outcome in outcomes)
        print()
        print('=== API fuzzing (schemathesis, seed %d, %d examples, %d s '
              'per deployment) ===' % (args.seed, args.max_examples,
                                       args.max_time))
        for outcome in outcomes:
            print('\n'.join(outcome.summary()))
        print('total: %.0f s' % (time.monotonic() - started))
        if failed:
            print('reports and logs: %s' % args.work_dir)
        elif not keep:
            shutil.rmtree(args.work_dir, ignore_errors=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
