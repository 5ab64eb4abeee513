#!/usr/bin/env bash
# Builds innet without its optional system libraries (no XDP data plane, no
# LevelDB store: `cargo build --no-default-features`) the way a machine
# without clang, libbpf and libleveldb would: as root, inside a private
# mount namespace where those are hidden; otherwise as is. Then checks that
# the binary runs and names the missing feature where one is needed.
#
#   scripts/build-minimal.sh [target-dir]   (default: target/minimal)
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:-target/minimal}"
if [ "$(id -u)" = 0 ] && [ -z "${INNET_MINIMAL_HIDDEN:-}" ] && command -v unshare >/dev/null; then
    exec unshare -m --propagation private env INNET_MINIMAL_HIDDEN=1 bash "$0" "$target"
fi
if [ -n "${INNET_MINIMAL_HIDDEN:-}" ]; then
    for f in /usr/bin/clang* /usr/lib/llvm-*/bin/clang* /usr/lib/x86_64-linux-gnu/libleveldb.so* \
        /usr/lib/x86_64-linux-gnu/libbpf.so*; do
        [ -e "$f" ] && mount --bind /dev/null "$f"
    done
    for d in /usr/include/leveldb /usr/include/bpf; do
        [ -d "$d" ] && mount -t tmpfs none "$d"
    done
    if clang --version >/dev/null 2>&1 || [ -n "$(ls /usr/include/leveldb 2>/dev/null)" ]; then
        echo "build-minimal: could not hide clang or LevelDB" >&2
        exit 1
    fi
    echo "build-minimal: clang, libbpf and libleveldb hidden"
fi
cargo build --release -q --no-default-features --target-dir "$target"
bin="$target/release/innet"
"$bin" sim txn --duration-s 5 --write-ratio 0.5 >/dev/null
if "$bin" testbed up txn 2>/tmp/innet-minimal.err; then
    echo "build-minimal: testbed ran without the xdp feature" >&2
    exit 1
fi
grep -q "feature \`xdp\`" /tmp/innet-minimal.err
echo "MINIMAL cargo build --no-default-features: built and ran without clang, libbpf and libleveldb"
