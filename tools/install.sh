#!/usr/bin/env bash
# Create .venv and install cyborg into it, pinned by constraints.txt.
#
#   tools/install.sh            cyborg, its requirements, the all-in-one's
#                               and the test tools (what tools/run-tests.sh
#                               needs; the client among them)
#   tools/install.sh --runtime  cyborg, its requirements and the all-in-one's
#                               (setup.cfg's aio extra: Placement and Glance)
#                               only: what tools/aio.sh needs
#   tools/install.sh --client   --runtime, and the command-line client
#                               (client-requirements.txt: openstack with
#                               the accelerator commands)
#
# A real deployment's node installs with pip instead (README, "Deploying
# for real"): without the aio extra, a compute node gets the agent's
# dependencies alone.
#
# Safe to run again: a part already installed from the same requirement
# files is skipped. Progress goes to the terminal one line per package; pip's
# whole output is kept in .venv/install.log and its end is shown when pip
# fails, with a plain statement when the package index cannot be reached.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=${CYBORG_VENV:-.venv}
parts=(runtime test)
case "${1:-}" in
    --runtime) parts=(runtime) ;;
    --client) parts=(runtime client) ;;
    '') ;;
    *) echo "usage: $0 [--runtime | --client]" >&2; exit 2 ;;
esac

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    echo "cyborg needs Python 3.10 or newer; $PYTHON is $("$PYTHON" -V 2>&1)" >&2
    exit 1
fi

stamp_of() {
    case "$1" in
        runtime) cat requirements.txt constraints.txt setup.cfg ;;
        test) cat test-requirements.txt constraints.txt setup.cfg ;;
        client) cat client-requirements.txt constraints.txt ;;
    esac | sha256sum | cut -d' ' -f1
}

installed() {
    [ "$(cat "$VENV/.cyborg-installed-$1" 2>/dev/null)" = "$(stamp_of "$1")" ]
}

# The fleet page's test drives headless Chromium (Debian's chromium
# package): installed with the test tools when missing, quietly, as root.
chromium_browser() {
    command -v chromium >/dev/null 2>&1 && return 0
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "chromium is missing: the fleet page test skips (and fails with CI=true); install Debian's chromium package." >&2
        return 0
    fi
    echo "Installing chromium (the fleet page test's browser) ..."
    local log
    log=$(mktemp -t cyborg-chromium.XXXXXX)
    if { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install \
            -y -q --no-install-recommends chromium; } >"$log" 2>&1; then
        rm -f "$log"
    else
        echo "chromium could not be installed; see $log" >&2
    fi
}
case " ${parts[*]} " in *" test "*) chromium_browser ;; esac

todo=()
for part in "${parts[@]}"; do
    installed "$part" || todo+=("$part")
done
[ ${#todo[@]} -eq 0 ] && exit 0

if [ ! -x "$VENV/bin/python" ]; then
    echo "Creating $VENV ..."
    "$PYTHON" -m venv "$VENV"
fi
LOG="$VENV/install.log"
: > "$LOG"

# The index pip reads (PIP_INDEX_URL, else its configuration, else PyPI).
index_url() {
    local url=${PIP_INDEX_URL:-}
    [ -n "$url" ] || url=$("$VENV/bin/python" -m pip config get global.index-url 2>/dev/null) || true
    echo "${url:-https://pypi.org/simple}"
}

# Whether an HTTP(S) index answers within 10 s (any other kind: assumed).
index_reachable() {
    case "$1" in http://*|https://*) ;; *) return 0 ;; esac
    "$VENV/bin/python" - "$1" <<'PY' >/dev/null 2>&1
import sys, urllib.error, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=10)
except urllib.error.HTTPError:
    pass  # it answered
PY
}

# Run pip, showing one line per package it collects or builds; on failure
# show the end of its output and say so plainly when the index is out of
# reach (pip itself ends with a misleading ResolutionImpossible then).
pip_install() {
    local what=$1
    shift
    echo "Installing $what ..."
    local status=0 part="$LOG.part"
    : > "$part"
    "$VENV/bin/python" -m pip install --disable-pip-version-check \
        --progress-bar off "$@" >"$part" 2>&1 &
    local pid=$!
    tail -n +1 -f "$part" --pid "$pid" 2>/dev/null |
        sed -un 's/^Collecting \([^ ]*\).*/  collecting \1/p;
                 s/^Building wheel for \([^ ]*\).*/  building \1/p;
                 s/^Successfully installed.*/  installed/p' || true
    wait "$pid" || status=$?
    cat "$part" >> "$LOG"
    rm -f "$part"
    [ "$status" -eq 0 ] && return 0
    echo >&2
    local index
    index=$(index_url)
    if grep -qE 'NewConnectionError|Failed to establish a new connection|Temporary failure in name resolution|Name or service not known|Network is unreachable|ConnectTimeoutError|Max retries exceeded|Could not fetch URL' "$LOG" ||
            ! index_reachable "$index"; then
        echo "cyborg could not be installed: the Python package index $index cannot be reached." >&2
        echo "Check the network or a proxy (https_proxy), or point PIP_INDEX_URL at a reachable index." >&2
    else
        echo "cyborg could not be installed; the end of pip's output:" >&2
        grep -vE '^\s*$' "$LOG" | tail -n 25 >&2
    fi
    echo "pip's whole output: $LOG" >&2
    exit 1
}

# mysqlclient's build needs the MariaDB client library's headers and
# pkg-config (Debian packages), installed here when missing.
mariadb_headers() {
    pkg-config --exists libmariadb 2>/dev/null && return 0
    echo "Installing the MariaDB client headers (libmariadb-dev) ..."
    local sudo=()
    [ "$(id -u)" = 0 ] || sudo=(sudo)
    "${sudo[@]}" apt-get update -q >>"$LOG" 2>&1
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q \
        libmariadb-dev pkg-config gcc >>"$LOG" 2>&1 || {
        echo "libmariadb-dev could not be installed; see $LOG" >&2
        exit 1
    }
}

for part in "${todo[@]}"; do
    case "$part" in
        runtime)
            pip_install pip --upgrade pip
            pip_install 'cyborg and its requirements' -c constraints.txt \
                -r requirements.txt
            # The all-in-one's embedded Placement and Glance.
            pip_install "cyborg and the all-in-one's servers" \
                -c constraints.txt -e '.[aio]' ;;
        client)
            pip_install 'the command-line client (openstack accelerator)' \
                -c constraints.txt -r client-requirements.txt ;;
        test)
            pip_install 'the test tools' -c constraints.txt \
                -r test-requirements.txt
            # The tests run on the production MariaDB driver, mysqlclient
            # (setup.cfg's mysql extra), and keep psycopg 3 tested: the
            # MariaDB client headers mysqlclient builds against come first.
            mariadb_headers
            pip_install 'the database drivers' -c constraints.txt \
                -e '.[aio,mysql,psycopg]' ;;
    esac
    stamp_of "$part" > "$VENV/.cyborg-installed-$part"
done
rm -f "$VENV/.cyborg-installed"
echo "Installed ${todo[*]} into $VENV."
