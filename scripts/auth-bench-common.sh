# Sourced by scripts/bench-*-auth.sh (the cost of --auth-key, side by side):
# arguments [reps] [seconds], the innet binary ($INNET), a scratch folder
# removed on exit with a fresh key file $dir/auth.key, and median.
set -euo pipefail
reps=${1:-3}
secs=${2:-3}
innet=${INNET:-target/release/innet}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '1 %s\n' "$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')" >"$dir/auth.key"
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
