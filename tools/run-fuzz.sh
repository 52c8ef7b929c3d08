#!/usr/bin/env bash
# Fuzz the API with schemathesis (tools/fuzz/run.py): every operation of the
# OpenAPI document cyborg serves, with valid and invalid requests, against
# the all-in-one and against cyborg-api, -conductor and -agent on MariaDB
# and RabbitMQ (noauth, then behind Keystone). Fails on any 5xx, any answer
# the document does not declare, or a list endpoint that no longer answers
# 200 after the run.
#
# schemathesis lives in its own virtualenv (.fuzz-venv), pinned by
# tools/fuzz/constraints.txt, so its requirements never touch .venv.
# Arguments go to tools/fuzz/run.py (--work-dir DIR keeps the reports and
# logs; --seed N replays a run; --deployments aio,processes,keystone).
#
# Needs MariaDB (127.0.0.1:3306, root without password) and RabbitMQ
# (127.0.0.1:5672, guest/guest): tools/start-services.sh starts them.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install.sh
PYTHON=${PYTHON:-python3}
VENV=${CYBORG_VENV:-.venv}
FUZZ_VENV=${CYBORG_FUZZ_VENV:-.fuzz-venv}

stamp=$(cat tools/fuzz/requirements.txt tools/fuzz/constraints.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$FUZZ_VENV/.cyborg-installed" 2>/dev/null)" != "$stamp" ]; then
    echo "Installing schemathesis into $FUZZ_VENV ..."
    rm -rf "$FUZZ_VENV"
    "$PYTHON" -m venv "$FUZZ_VENV"
    # git status stays clean without an entry in .gitignore.
    echo '*' > "$FUZZ_VENV/.gitignore"
    "$FUZZ_VENV/bin/python" -m pip install -q -c tools/fuzz/constraints.txt \
        -r tools/fuzz/requirements.txt
    echo "$stamp" > "$FUZZ_VENV/.cyborg-installed"
fi

exec "$VENV/bin/python" tools/fuzz/run.py --fuzz-venv "$FUZZ_VENV" "$@"
