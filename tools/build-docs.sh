#!/usr/bin/env bash
# Build the documentation, the API reference and the release notes with
# warnings as errors (sphinx-build -W), as CI does. The builders live in
# their own virtualenv (.docs-venv, pinned by doc/requirements.txt); cyborg
# and its requirements come from the project's .venv (tools/install.sh),
# added to .docs-venv's path, so nothing is installed twice. The HTML goes
# to doc/build, api-ref/build and releasenotes/build.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${CYBORG_VENV:-.venv}
DOCS_VENV=${CYBORG_DOCS_VENV:-.docs-venv}

[ -x "$VENV/bin/python" ] || tools/install.sh
stamp=$(sha256sum doc/requirements.txt | cut -d' ' -f1)
if [ "$(cat "$DOCS_VENV/.cyborg-installed" 2>/dev/null)" != "$stamp" ]; then
    echo "Installing the documentation builders into $DOCS_VENV ..."
    rm -rf "$DOCS_VENV"
    "$PYTHON" -m venv "$DOCS_VENV"
    echo '*' > "$DOCS_VENV/.gitignore"
    "$DOCS_VENV/bin/python" -m pip install -q --disable-pip-version-check \
        -r doc/requirements.txt
    echo "$stamp" > "$DOCS_VENV/.cyborg-installed"
fi
# .venv's site directory, with its .pth files (cyborg's editable install).
site=$("$VENV/bin/python" -c \
    'import sysconfig; print(sysconfig.get_paths()["purelib"])')
docs_site=$("$DOCS_VENV/bin/python" -c \
    'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "import site; site.addsitedir('$site')" > "$docs_site/cyborg-venv.pth"

build() {
    echo "=== $1 ==="
    shift
    "$DOCS_VENV/bin/sphinx-build" -W --keep-going -q "$@"
}
build documentation -b html doc/source doc/build/html
build 'API reference' -b html api-ref/source api-ref/build/html
build 'release notes' -a -E -b html releasenotes/source \
    releasenotes/build/html
echo 'documentation, API reference and release notes built without warnings'
