#!/usr/bin/env bash
# Create .venv and install cyborg with its test dependencies, pinned by
# constraints.txt. Safe to run again: it does nothing when the installed set
# already matches the requirement files.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${CYBORG_VENV:-.venv}

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    echo "cyborg needs Python 3.10 or newer; $PYTHON is $("$PYTHON" -V 2>&1)" >&2
    exit 1
fi

stamp_of() {
    cat requirements.txt test-requirements.txt constraints.txt setup.cfg | sha256sum | cut -d' ' -f1
}

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi

stamp=$(stamp_of)
if [ "$(cat "$VENV/.cyborg-installed" 2>/dev/null)" != "$stamp" ]; then
    echo "Installing cyborg and its dependencies into $VENV ..."
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -c constraints.txt \
        -r requirements.txt -r test-requirements.txt
    "$VENV/bin/python" -m pip install -q -c constraints.txt --no-deps -e .
    echo "$stamp" > "$VENV/.cyborg-installed"
fi
