#!/usr/bin/env bash
# Installs what innet needs on a fresh Debian 12 machine (idempotent, quiet when done).
set -euo pipefail

need_apt=()
# clang/llvm/libbpf-dev/gcc-multilib build the BPF programs in bpf/ (gcc-multilib
# provides asm/types.h for -target bpf); libelf-dev and zlib1g-dev build the
# vendored libbpf of libbpf-rs; bpftool and iproute2 run the XDP testbed;
# tshark runs the Wireshark dissectors (tools/wireshark) over the golden vectors;
# etcd-server is the chain store's peer in `innet bench chain-etcd` (the
# benchmark starts and stops its own members).
for pkg in build-essential pkg-config fonts-dejavu-core git libleveldb-dev \
    clang llvm libbpf-dev gcc-multilib libelf-dev zlib1g-dev bpftool iproute2 tshark etcd-server; do
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
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
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
    echo "setup: no Rust toolchain found. Install one with rustup (https://rustup.rs), Rust 1.82 or newer," >&2
    echo "       then run this command again." >&2
    exit 1
fi
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy rustfmt >/dev/null 2>&1 || true
