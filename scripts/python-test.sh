#!/usr/bin/env bash
# The Python package's test: `pip install ./python` into a fresh virtualenv
# (the wheel is built there by maturin from the Rust crates, in this
# workspace's target/), then pytest over python/tests against live loopback
# deployments, and the example script. Needs python3-venv (scripts/setup.sh)
# and PyPI (maturin, pytest). Fails if pytest fails or collects no test.
# The key-value service's test runs replicas as `innet` processes: the
# release binary is built first (a no-op when it is up to date).
#
#   scripts/python-test.sh [venv-dir]   (default: target/python-venv, recreated)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
venv="${1:-target/python-venv}"
case "$venv" in /*) ;; *) venv="$ROOT/$venv" ;; esac
python="${PYTHON:-python3}"
rm -rf "$venv"
cargo build --release -q -p innet --bin innet
export INNET_BIN="$ROOT/target/release/innet"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q pytest
"$venv/bin/python" -m pip install -q ./python
# Run from outside the source tree, so `import innet` is the installed package.
log=$(mktemp)
(cd /tmp && "$venv/bin/python" -m pytest -q -p no:cacheprovider "$ROOT/python/tests") 2>&1 | tee "$log" \
    || { echo "pytest failed" >&2; exit 1; }
passed=$(grep -oE "[0-9]+ passed" "$log" | tail -1 | grep -oE "[0-9]+" || echo 0)
if [ "$passed" -eq 0 ] || grep -qE "[0-9]+ (failed|error|skipped)" "$log"; then
    echo "pytest: $passed passed; failures, errors, skips or no tests (see above)" >&2
    exit 1
fi
(cd /tmp && "$venv/bin/python" "$ROOT/examples/python/tour.py" >/dev/null)
echo "PYTHON pip install ./python in a fresh venv; pytest: $passed passed; examples/python/tour.py ran; ${SECONDS} s"
