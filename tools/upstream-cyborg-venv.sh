#!/usr/bin/env bash
# Make sure OpenStack Cyborg 17.0.0 is installed in a virtualenv of its own
# (.upstream-cyborg-venv, or $CYBORG_UPSTREAM_VENV), for the tests of
# `cyborg-dbsync import-upstream`: they build an upstream database with its
# own cyborg-dbsync (cyborg/tests/fixtures/upstream_cyborg.py). Its package
# is named cyborg too, so it never goes into .venv. A virtualenv that already
# has openstack-cyborg 17.0.0 and PyMySQL is left as it is; otherwise it is
# built anew (about a minute). Prints the virtualenv's absolute path.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
UPSTREAM_VENV=${CYBORG_UPSTREAM_VENV:-.upstream-cyborg-venv}
VERSION=17.0.0

ready() {
    "$UPSTREAM_VENV/bin/python" - "$VERSION" 2>/dev/null <<'PY'
import sys
from importlib import metadata
import pymysql  # noqa: F401
sys.exit(metadata.version('openstack-cyborg') != sys.argv[1])
PY
}

if ! ready; then
    echo "Installing openstack-cyborg $VERSION into $UPSTREAM_VENV ..." >&2
    rm -rf "$UPSTREAM_VENV"
    "$PYTHON" -m venv "$UPSTREAM_VENV"
    "$UPSTREAM_VENV/bin/python" -m pip install -q --disable-pip-version-check \
        "openstack-cyborg==$VERSION" PyMySQL >&2
    ready
fi
cd "$UPSTREAM_VENV" && pwd
