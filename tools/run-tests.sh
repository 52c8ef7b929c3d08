#!/usr/bin/env bash
# Install cyborg into .venv if needed, check style, then run every test
# (unit and functional) with stestr. Arguments are passed to `stestr run`
# (for example a test name regex).
#
# The functional tests use PostgreSQL (127.0.0.1:5432), MariaDB
# (127.0.0.1:3306) and RabbitMQ (127.0.0.1:5672). Without CI=true a missing
# server skips the tests that need it; with CI=true it fails them.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install.sh
VENV=${CYBORG_VENV:-.venv}

"$VENV/bin/ruff" check cyborg os_acc benchmarks tools

# oslotest captures each test's output and logs; they show only on failure.
export OS_STDOUT_CAPTURE=${OS_STDOUT_CAPTURE:-1}
export OS_STDERR_CAPTURE=${OS_STDERR_CAPTURE:-1}
export OS_LOG_CAPTURE=${OS_LOG_CAPTURE:-1}

# OpenStack Cyborg 17.0.0 in its own virtualenv, for the import tests.
CYBORG_UPSTREAM_VENV=$(tools/upstream-cyborg-venv.sh)
export CYBORG_UPSTREAM_VENV

rc=0
# The Nova tests (cyborg/tests/functional/nova) are tools/run-nova-tests.sh's,
# the rehearsal of the switch from OpenStack Cyborg
# (cyborg/tests/functional/upstream_switch) tools/run-upstream-rehearsal.sh's:
# they need the machine to themselves.
"$VENV/bin/stestr" run --concurrency "${CYBORG_TEST_CONCURRENCY:-$(nproc)}" \
    --exclude-regex '^cyborg\.tests\.functional\.(nova|upstream_switch)\.' \
    "$@" || rc=$?
# One plain summary line, whatever stestr printed above.
"$VENV/bin/python" tools/summarize-last-run.py || true
exit $rc
