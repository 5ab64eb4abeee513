#!/usr/bin/env bash
# The cost of --auth-key on a live NetCRAQ chain, side by side: the same
# binary, runs interleaved (without keys, with keys, ...), each a fresh
# `innet up chain` (3 nodes on loopback) loaded by `innet client chain
# --load` (the batched generator, 64 clients, unkeyed as clients are):
# puts only, then gets only. Prints one line per run and the medians.
#
#   scripts/bench-chain-auth.sh [reps] [seconds]
#
# Figures in docs/security.md ("The packet authenticator").
source "$(dirname "$0")/auth-bench-common.sh"

# run KEYS_FLAG...: starts the chain, loads it, stops it; prints "puts gets".
run() {
	"$innet" up chain --nodes 3 --listen 127.0.0.1:0 "$@" >"$dir/up.out" 2>"$dir/up.err" &
	local pid=$! nodes=""
	for _ in $(seq 400); do
		nodes=$(awk '/^node[0-9]+ /{print $2}' "$dir/up.out" | paste -sd, -)
		[ "$(tr ',' '\n' <<<"$nodes" | grep -c .)" = 3 ] && break
		sleep 0.05
	done
	[ "$(tr ',' '\n' <<<"$nodes" | grep -c .)" = 3 ] || { echo "innet up chain printed no 3 nodes in 20 s: $(cat "$dir/up.err")" >&2; exit 1; }
	local out=()
	for ratio in 1 0; do
		out+=("$("$innet" client chain --nodes "$nodes" --load --clients 64 --write-ratio "$ratio" \
			--duration-s "$secs" --json | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["load"]["ops_per_s"]))')")
	done
	kill -INT "$pid"
	wait "$pid" || true
	echo "${out[@]}"
}

declare -a off_puts off_gets on_puts on_gets
for r in $(seq "$reps"); do
	read -r p g < <(run)
	off_puts+=("$p") off_gets+=("$g")
	echo "rep $r without keys: puts/s $p gets/s $g"
	read -r p g < <(run --auth-key "$dir/auth.key")
	on_puts+=("$p") on_gets+=("$g")
	echo "rep $r with keys:    puts/s $p gets/s $g"
done
echo "median of $reps: without keys puts/s $(median "${off_puts[@]}") gets/s $(median "${off_gets[@]}");" \
	"with keys puts/s $(median "${on_puts[@]}") gets/s $(median "${on_gets[@]}")"
echo "commit $(git rev-parse --short HEAD), load average $(cut -d' ' -f1-3 /proc/loadavg)"
