#!/usr/bin/env bash
# The cost of --auth-key on the XDP Paxos testbed, side by side: the same
# binary, runs interleaved (without keys, with keys, ...), each one round of
# `innet bench xdp-paxos` (a fresh testbed: BPF coordinator, 3 acceptors,
# vote counter with one vote per machine and the decision ring, 2 learners,
# 2 proposers x 32 in flight in the hosts namespace), of which the XDP
# deployment's committed values/s are printed. Needs root; run it under the
# XDP lock (`flock /tmp/innet-xdp.lock scripts/bench-paxos-auth.sh`).
#
#   scripts/bench-paxos-auth.sh [reps] [seconds]
#
# Figures in docs/security.md ("The packet authenticator").
source "$(dirname "$0")/auth-bench-common.sh"

# run [--auth-key F]: one round; prints the XDP deployment's values/s.
run() {
	rm -f "$dir/xdp-paxos.jsonl"
	"$innet" bench xdp-paxos --runs 1 --duration-s "$secs" --out "$dir" "$@" >"$dir/bench.out" 2>"$dir/bench.err" ||
		{ echo "innet bench xdp-paxos failed: $(tail -3 "$dir/bench.err")" >&2; exit 1; }
	python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); print(round(r["xdp"]["committed_per_s"]), r["xdp_auth"])' \
		"$dir/xdp-paxos.jsonl"
}

declare -a off on
for r in $(seq "$reps"); do
	read -r v keyed < <(run)
	[ "$keyed" = False ] || { echo "round without keys ran keyed" >&2; exit 1; }
	off+=("$v")
	echo "rep $r without keys: $v values/s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
	read -r v keyed < <(run --auth-key "$dir/auth.key")
	[ "$keyed" = True ] || { echo "round with keys ran without" >&2; exit 1; }
	on+=("$v")
	echo "rep $r with keys:    $v values/s (load average $(cut -d' ' -f1-3 /proc/loadavg))"
done
echo "median of $reps: without keys $(median "${off[@]}") values/s, with keys $(median "${on[@]}") values/s"
echo "commit $(git rev-parse --short HEAD), load average $(cut -d' ' -f1-3 /proc/loadavg)"
