#!/usr/bin/env bash
# Install OpenStack Cyborg 17.0.0 (upstream's openstack-cyborg, from the
# package index) into a virtualenv of its own, .upstream-cyborg-venv (or
# $CYBORG_UPSTREAM_VENV), for the rehearsal of the switch from it
# (cyborg/tests/functional/upstream_switch, run by
# tools/run-upstream-rehearsal.sh). Nothing of it goes into .venv: upstream's
# package is also called "cyborg".
#
# Safe to run again: a virtualenv installed from the same list of packages
# is kept (a stamp file records it); another one is made afresh.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
UPSTREAM_VENV=${CYBORG_UPSTREAM_VENV:-.upstream-cyborg-venv}
# Upstream's services, and the MariaDB driver its database URL names.
PACKAGES=(openstack-cyborg==17.0.0 PyMySQL)

stamp=$(printf '%s\n' "${PACKAGES[@]}" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$UPSTREAM_VENV/.cyborg-installed" 2>/dev/null)" = "$stamp" ]; then
    exit 0
fi
echo "Installing ${PACKAGES[*]} into $UPSTREAM_VENV ..."
rm -rf "$UPSTREAM_VENV"
"$PYTHON" -m venv "$UPSTREAM_VENV"
log="$UPSTREAM_VENV/install.log"
if ! "$UPSTREAM_VENV/bin/python" -m pip install --disable-pip-version-check \
        "${PACKAGES[@]}" >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "pip could not install ${PACKAGES[*]}; its whole output is in $log" >&2
    exit 1
fi
echo "$stamp" > "$UPSTREAM_VENV/.cyborg-installed"
