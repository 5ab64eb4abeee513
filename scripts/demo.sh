#!/usr/bin/env bash
# The main job: build innet and run the headline experiments in the simulator.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup.sh
cargo build --release -q -p innet
exec ./target/release/innet demo "$@"
