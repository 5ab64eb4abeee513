#!/usr/bin/env bash
# Runs each cargo-fuzz target of fuzz/ for N seconds (default 30), one after
# another; exits non-zero on the first crash. Optional in CI: needs a nightly
# toolchain and cargo-fuzz, and says so (exit 0) when they are missing.
#
#   scripts/fuzz-smoke.sh [seconds]
#
# Environment: CARGO_TARGET_DIR (default: fuzz/target), FUZZ_TARGETS
# (default: every target), FUZZ_LOG_DIR (default: a temporary directory).
set -euo pipefail

seconds="${1:-30}"
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
    echo "usage: $0 [seconds >= 1]" >&2
    exit 2
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/fuzz"

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz-smoke: SKIPPED: no nightly toolchain (rustup toolchain install nightly --profile minimal)"
    exit 0
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz-smoke: SKIPPED: cargo-fuzz not installed (cargo install cargo-fuzz)"
    exit 0
fi

targets="${FUZZ_TARGETS:-$(cargo +nightly fuzz list)}"
log_dir="${FUZZ_LOG_DIR:-$(mktemp -d)}"
mkdir -p "$log_dir"

# Each target starts from its committed seeds, corpus/<target>/seed-*
# (examples/seeds.rs writes them from the golden vectors; fuzz/README.md).

status=0
for t in $targets; do
    log="$log_dir/$t.log"
    echo "fuzz-smoke: $t for ${seconds}s (log: $log)"
    if cargo +nightly fuzz run "$t" -- -max_total_time="$seconds" -print_final_stats=1 >"$log" 2>&1; then
        grep -E '^stat::number_of_executed_units|^Done [0-9]+ runs' "$log" | sed "s/^/fuzz-smoke: $t: /" || true
    else
        echo "fuzz-smoke: $t FAILED; last lines of $log:"
        tail -n 40 "$log"
        status=1
        break
    fi
done
exit "$status"
