#!/usr/bin/env bash
# Run upstream's API tests (cyborg-tempest-plugin's
# cyborg_tempest_plugin.tests.api) against cyborg on this machine: a real
# Keystone and Placement, a fresh MariaDB database, a RabbitMQ virtual host,
# cyborg-conductor, -api and -agent as processes; once with the default
# policy and once with [oslo_policy] enforce_new_defaults = True.
#
# tempest and the plugin live in their own virtualenv (.tempest-venv),
# pinned by tools/tempest/constraints.txt, so their requirements never touch
# .venv. Fails when a test fails that tools/tempest/expected-failures.txt
# does not list, or when a listed one passes. Arguments go to
# tools/tempest/run.py (--work-dir DIR keeps tempest.conf and the logs).
#
# Needs MariaDB (127.0.0.1:3306, root without password) and RabbitMQ
# (127.0.0.1:5672, guest/guest): tools/start-services.sh starts them.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install.sh
PYTHON=${PYTHON:-python3}
VENV=${CYBORG_VENV:-.venv}
TEMPEST_VENV=${CYBORG_TEMPEST_VENV:-.tempest-venv}

stamp=$(cat tools/tempest/requirements.txt tools/tempest/constraints.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$TEMPEST_VENV/.cyborg-installed" 2>/dev/null)" != "$stamp" ]; then
    echo "Installing tempest and cyborg-tempest-plugin into $TEMPEST_VENV ..."
    rm -rf "$TEMPEST_VENV"
    "$PYTHON" -m venv "$TEMPEST_VENV"
    "$TEMPEST_VENV/bin/python" -m pip install -q -c tools/tempest/constraints.txt \
        -r tools/tempest/requirements.txt
    echo "$stamp" > "$TEMPEST_VENV/.cyborg-installed"
fi

exec "$VENV/bin/python" tools/tempest/run.py --tempest-venv "$TEMPEST_VENV" "$@"
