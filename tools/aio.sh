#!/usr/bin/env bash
# Install cyborg into .venv if needed, then run the all-in-one control plane
# (API on http://127.0.0.1:6666) in the foreground until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install.sh --runtime
exec "${CYBORG_VENV:-.venv}/bin/cyborg-aio" "$@"
