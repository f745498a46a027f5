#!/usr/bin/env bash
# behavsim's two entry points; each sets everything up on a fresh machine first.
#   bash run.sh main    the main job on the embedded defaults
#   bash run.sh test    the test suite
#   bash run.sh lint    ruff (lint and format check) and mypy on the packages
# The virtual environment lives in $BEHAVSIM_VENV (default: .venv in this folder).
set -euo pipefail
cd "$(dirname "$0")"
VENV="${BEHAVSIM_VENV:-.venv}"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3

setup() {
    if [ ! -x "$VENV/bin/python" ]; then
        "$PY" -m venv "$VENV"
    fi
    local stamp="$VENV/.behavsim-installed"
    local want
    want="$(cat setup.cfg pyproject.toml | sha256sum | cut -c1-16)"
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        "$VENV/bin/python" -m pip install -q --upgrade pip
        # The CPU build of PyTorch; an unpinned torch would pull a multi-GB CUDA build.
        "$VENV/bin/python" -m pip install -q torch==2.13.0
        "$VENV/bin/python" -m pip install -q -e '.[test]'
        echo "$want" > "$stamp"
    fi
}

case "${1:-}" in
    main)
        setup
        shift
        exec "$VENV/bin/python" -m experiments.main "$@"
        ;;
    test)
        setup
        # Headless Chromium renders the HTML report in one test (Debian's package).
        if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
            (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) \
                || echo "run.sh: could not install chromium; the browser test will be skipped" >&2
        fi
        shift
        exec "$VENV/bin/python" -m pytest "$@"
        ;;
    lint)
        setup
        "$VENV/bin/ruff" check behavsim contexts policies experiments
        "$VENV/bin/ruff" format --check behavsim contexts policies experiments
        "$VENV/bin/mypy" behavsim
        ;;
    *)
        echo "usage: bash run.sh main|test|lint [args...]" >&2
        exit 2
        ;;
esac
