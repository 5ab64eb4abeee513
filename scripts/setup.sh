#!/usr/bin/env bash
# Installs what innet needs on a fresh Debian 12 machine (idempotent, quiet when done).
set -euo pipefail

SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
need_apt=()
# clang/llvm/libbpf-dev/gcc-multilib build the BPF programs in bpf/ (gcc-multilib
# provides asm/types.h for -target bpf); libelf-dev and zlib1g-dev build the
# vendored libbpf of libbpf-rs; bpftool and iproute2 run the XDP testbed;
# tshark runs the Wireshark dissectors (tools/wireshark) over the golden vectors;
# etcd-server is the chain store's peer in `innet bench chain-etcd` (the
# benchmark starts and stops its own members); python3-venv and python3-dev
# build and test the Python package (scripts/python-test.sh).
for pkg in build-essential pkg-config fonts-dejavu-core git curl ca-certificates libleveldb-dev \
    clang llvm libbpf-dev gcc-multilib libelf-dev zlib1g-dev bpftool iproute2 tshark etcd-server \
    python3-venv python3-dev; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
# mininet and bridge-utils run `innet mininet` (tools/mininet) with Linux-bridge
# switches; installed without Mininet's recommended Open vSwitch, which it does
# not use here.
need_bare=()
for pkg in mininet bridge-utils; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need_bare+=("$pkg")
done
if [ $((${#need_apt[@]} + ${#need_bare[@]})) -gt 0 ]; then
    echo "setup: installing ${need_apt[*]} ${need_bare[*]} (apt)"
    # tshark's postinst asks whether non-root users may capture; answer no
    # beforehand so the install never stops for a question.
    echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
    $SUDO apt-get update -qq
    # (through env: sudo drops the caller's environment)
    [ ${#need_apt[@]} -eq 0 ] || $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
    [ ${#need_bare[@]} -eq 0 ] || $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_bare[@]}" >/dev/null
    # Debian starts a system etcd on 127.0.0.1:2379 where systemd runs;
    # innet only needs the binary.
    if [[ " ${need_apt[*]} " == *" etcd-server "* ]] && [ -d /run/systemd/system ]; then
        $SUDO systemctl disable --now etcd >/dev/null 2>&1 || true
    fi
fi

if ! command -v cargo >/dev/null 2>&1; then
    [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
    # Debian 12's own rustc (1.63) is too old for innet's dependencies: install
    # the stable toolchain with rustup (into ~/.cargo, as rustup.rs does).
    echo "setup: no Rust toolchain found; installing stable Rust with rustup into $HOME/.cargo" >&2
    # (rustup-init takes its role from its file name)
    init="$(mktemp -d)/rustup-init"
    if ! curl -sSfL --retry 3 -o "$init" "https://static.rust-lang.org/rustup/dist/$(uname -m)-unknown-linux-gnu/rustup-init"; then
        echo "setup: could not download rustup-init. Install Rust 1.82 or newer (https://rustup.rs), then run this command again." >&2
        exit 1
    fi
    chmod +x "$init"
    "$init" -y -q --profile minimal --default-toolchain stable -c clippy -c rustfmt >/dev/null
    rm -rf "$(dirname "$init")"
    export PATH="$HOME/.cargo/bin:$PATH"
fi
rust_minor="$(rustc --version | sed -E 's/^rustc 1\.([0-9]+).*/\1/')"
if [ "${rust_minor:-0}" -lt 82 ] 2>/dev/null; then
    if command -v rustup >/dev/null 2>&1; then
        echo "setup: $(rustc --version) is older than 1.82; installing stable with rustup" >&2
        rustup toolchain install stable --profile minimal -c clippy -c rustfmt >/dev/null && rustup default stable >/dev/null
    else
        echo "setup: $(rustc --version) is older than 1.82, which innet needs. Remove the Debian rustc/cargo packages" >&2
        echo "       (apt-get remove rustc cargo) and run this command again: it installs stable Rust with rustup." >&2
        exit 1
    fi
fi
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy rustfmt >/dev/null 2>&1 || true
