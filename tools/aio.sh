#!/usr/bin/env bash
# Install cyborg into .venv if needed, then run the all-in-one control plane
# in the foreground until Ctrl-C: the API and its /metrics on
# http://127.0.0.1:6666, the fleet page on http://127.0.0.1:6680/v2/fleet.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install.sh --runtime
exec "${CYBORG_VENV:-.venv}/bin/cyborg-aio" "$@"
