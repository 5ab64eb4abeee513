#!/bin/bash
# Runs NetChain's P4 reference's own client scripts (netx-repo/netchain-p4:
# client/nc_socket.py, client/receiver.py; Python 2), unmodified, against
# innet's XDP NetChain chain, and checks that every request was answered on
# port 8889. See README.md. Root; takes the machine's XDP lock.
#
#   tools/netchain-reference/run.sh PATH-TO-netchain-p4 [SECONDS]
set -euo pipefail
ref=${1:?usage: $0 PATH-TO-netchain-p4-checkout [SECONDS]}
secs=${2:-3}
here=$(cd "$(dirname "$0")/../.." && pwd)
innet=${INNET:-$here/target/release/innet}
python2=${PYTHON2:-python2}
for f in client/nc_socket.py client/receiver.py controller/nc_config.py; do
    [ -f "$ref/$f" ] || { echo "$ref/$f missing: give a checkout of github.com/netx-repo/netchain-p4" >&2; exit 2; }
done
"$python2" -c 'import thread' 2>/dev/null || { echo "$python2 is not Python 2 (set PYTHON2=...)" >&2; exit 2; }
[ -x "$innet" ] || { echo "$innet missing: cargo build --release -p innet (or set INNET=...)" >&2; exit 2; }

# The scripts import ../controller/nc_config.py relative to the working folder.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/client" "$work/controller"
cp "$ref"/client/nc_socket.py "$ref"/client/receiver.py "$work/client/"
cp "$ref"/controller/nc_config.py "$work/controller/"
# One chain (vring.txt's format: id, then head .. tail) of the testbed's nodes.
echo "1 10.78.0.1 10.78.0.2 10.78.0.3" > "$work/client/vring-innet.txt"

exec 9>/tmp/innet-xdp.lock
flock 9
"$innet" testbed down >/dev/null
"$innet" testbed up chain --protocol netchain --nodes 3
cd "$work/client"
in_client() { ip netns exec innet-client "$@"; }
in_client timeout $((2 * secs + 3)) "$python2" receiver.py 10.78.0.100 >"$work/receiver.out" 2>&1 &
sleep 1
# nc_socket.py OP vnode_num vring_file num_kv size_vgroup: 200 keys in 100 groups.
in_client timeout "$secs" "$python2" nc_socket.py write 1 vring-innet.txt 200 100 >"$work/write.out" 2>&1 || true
in_client timeout "$secs" "$python2" nc_socket.py read 1 vring-innet.txt 200 100 >"$work/read.out" 2>&1 || true
wait || true
status=$("$innet" testbed status)
"$innet" testbed down >/dev/null

counter() { echo "$status" | awk -v n="node $1" -v c="$2" 'index($0, n " ") == 1 && $3 == c { print $4 }'; }
replies=$(tail -n 1 "$work/receiver.out" | awk '{ print $2 }')
writes=$(counter 0 writes_sequenced)
reads=$(counter 2 reads_answered)
echo "receiver.py counted $replies replies on port 8889; head sequenced $writes writes," \
    "replicas applied $(counter 1 writes_applied) and $(counter 2 writes_applied), tail answered $reads reads"
[ -n "$replies" ] && [ "$writes" -gt 0 ] && [ "$reads" -gt 0 ] && [ "$replies" -eq $((writes + reads)) ] || {
    echo "FAIL: replies differ from what the chain answered" >&2
    exit 1
}
echo "OK"
