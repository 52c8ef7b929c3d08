#!/usr/bin/env bash
# Rehearse the switch from OpenStack Cyborg 17.0.0
# (cyborg/tests/functional/upstream_switch): upstream's own conductor, API
# and agents (its fake driver) run on MariaDB, RabbitMQ and a real
# Placement; profiles and bound ARQs are made there, upstream is stopped,
# its database imported (cyborg-dbsync import-upstream) and cyborg's
# processes started on the result with the same Placement. Arguments go to
# `stestr run` (a test regex).
#
# Upstream lives in its own virtualenv (.upstream-cyborg-venv, or
# $CYBORG_UPSTREAM_VENV), built here by tools/upstream-cyborg-venv.sh
# when missing (about a minute). The test takes the machine to itself
# while upstream and then cyborg start (about a minute and a half on 2
# CPUs).
#
# Needs MariaDB (127.0.0.1:3306, root without password) and RabbitMQ
# (127.0.0.1:5672, guest/guest, rabbitmqctl for virtual hosts of its own):
# tools/start-services.sh starts them.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install.sh
VENV=${CYBORG_VENV:-.venv}
CYBORG_UPSTREAM_VENV=$(tools/upstream-cyborg-venv.sh)
export CYBORG_UPSTREAM_VENV

# oslotest captures each test's output and logs; they show only on failure
# (with every service's log, upstream's included).
export OS_STDOUT_CAPTURE=${OS_STDOUT_CAPTURE:-1}
export OS_STDERR_CAPTURE=${OS_STDERR_CAPTURE:-1}
export OS_LOG_CAPTURE=${OS_LOG_CAPTURE:-1}

rc=0
"$VENV/bin/stestr" --test-path ./cyborg/tests/functional/upstream_switch \
    run --concurrency 1 "$@" || rc=$?
"$VENV/bin/python" tools/summarize-last-run.py || true
exit $rc
