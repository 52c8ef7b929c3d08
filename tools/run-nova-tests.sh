#!/usr/bin/env bash
# Run the Nova tests (cyborg/tests/functional/nova): a real Nova (nova-api,
# -conductor, -scheduler and -compute with the fake virt driver) and Neutron's
# API server boot servers with accelerators onto cyborg-api, -conductor and
# -agent as separate processes, with a real Keystone, Placement and Glance,
# over RabbitMQ and MariaDB. Arguments go to `stestr run` (a test regex).
#
# Nova and Neutron live in their own virtualenv (.nova-venv, or
# $CYBORG_NOVA_VENV), pinned by tools/nova/constraints.txt, so their
# requirements never touch .venv; it is built here when missing or when the
# requirement files changed. The tests run one at a time: each class brings
# up its own deployment, which takes both CPUs while it starts.
#
# Needs MariaDB (127.0.0.1:3306, root without password) and RabbitMQ
# (127.0.0.1:5672, guest/guest, rabbitmqctl for a virtual host of its own):
# tools/start-services.sh starts them.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install.sh
# OpenStack Cyborg 17.0.0 for test_upstream_switch: a server booted under
# it survives the switch to cyborg.
CYBORG_UPSTREAM_VENV=$(tools/upstream-cyborg-venv.sh)
export CYBORG_UPSTREAM_VENV
PYTHON=${PYTHON:-python3}
VENV=${CYBORG_VENV:-.venv}
NOVA_VENV=${CYBORG_NOVA_VENV:-.nova-venv}

stamp=$(cat tools/nova/requirements.txt tools/nova/constraints.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$NOVA_VENV/.cyborg-installed" 2>/dev/null)" != "$stamp" ]; then
    echo "Installing Nova and Neutron into $NOVA_VENV ..."
    rm -rf "$NOVA_VENV"
    "$PYTHON" -m venv "$NOVA_VENV"
    "$NOVA_VENV/bin/python" -m pip install -q --disable-pip-version-check \
        -c tools/nova/constraints.txt -r tools/nova/requirements.txt
    echo "$stamp" > "$NOVA_VENV/.cyborg-installed"
fi
CYBORG_NOVA_VENV=$(cd "$NOVA_VENV" && pwd)
export CYBORG_NOVA_VENV

# oslotest captures each test's output and logs; they show only on failure
# (with every service's log).
export OS_STDOUT_CAPTURE=${OS_STDOUT_CAPTURE:-1}
export OS_STDERR_CAPTURE=${OS_STDERR_CAPTURE:-1}
export OS_LOG_CAPTURE=${OS_LOG_CAPTURE:-1}

rc=0
"$VENV/bin/stestr" --test-path ./cyborg/tests/functional/nova run \
    --concurrency 1 "$@" || rc=$?
"$VENV/bin/python" tools/summarize-last-run.py || true
exit $rc
