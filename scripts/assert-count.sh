#!/usr/bin/env bash
# Counts public functions and assertions in the protocol crates' production
# code (issue 22 item 5: at least one assertion per public function).
#
# How it counts, per crate (crates/<name>/src/**/*.rs):
# * only the lines of each file before its first top-level `#[cfg(test)]`
#   (the unit tests sit at the end of every file), and no comment lines;
# * "pub fn": lines declaring `pub fn` or `pub const fn` (any visibility
#   qualifier such as `pub(crate)` counts too);
# * "asserts": `assert!`, `assert_eq!`, `assert_ne!`, `debug_assert!`,
#   `debug_assert_eq!`, `debug_assert_ne!` (compile-time `const _: () =
#   assert!(..)` included);
# * "bare": public functions whose body holds no assertion (a body is
#   followed by counting braces from the `pub fn` line; `--list` names them).
#
# Usage: scripts/assert-count.sh [--list] [crate...]
# Default crates: wire core txn paxos chain sim paxos-kv.
set -euo pipefail
cd "$(dirname "$0")/.."
list=0
if [[ "${1:-}" == "--list" ]]; then
  list=1
  shift
fi
crates=("$@")
if [[ ${#crates[@]} -eq 0 ]]; then
  crates=(wire core txn paxos chain sim paxos-kv)
fi
printf '%-10s %7s %8s %6s %6s\n' crate "pub fn" asserts ratio bare
for crate in "${crates[@]}"; do
  find "crates/$crate/src" -name '*.rs' | sort | while read -r file; do
    awk -v file="$file" -v list="$list" '
      /^#\[cfg\(test\)\]/ { exit }
      /^[[:space:]]*\/\// { next }
      {
        line = $0
        sub(/\/\/.*/, "", line)
        n = gsub(/(debug_)?assert(_eq|_ne)?!/, "&", line)
        asserts += n
        if (line ~ /pub(\([a-z]+\))? (const )?fn /) {
          pubfns++
          if (infn) { } # nested pub fn: counted, body tracked by the outer one
          else { infn = 1; depth = 0; opened = 0; fnasserts = 0; name = line; start = NR }
        }
        if (infn) {
          fnasserts += n
          o = gsub(/\{/, "{", line); c = gsub(/\}/, "}", line)
          depth += o - c
          if (o > 0) opened = 1
          if ((opened && depth <= 0) || (!opened && line ~ /;[[:space:]]*$/)) {
            if (fnasserts == 0) {
              bare++
              if (list) { sub(/^[[:space:]]*/, "", name); print "BARE " file ":" start ": " name > "/dev/stderr" }
            }
            infn = 0
          }
        }
      }
      END { print pubfns + 0, asserts + 0, bare + 0 }
    ' "$file"
  done | awk -v crate="$crate" '
    { p += $1; a += $2; b += $3 }
    END { printf "%-10s %7d %8d %6.2f %6d\n", crate, p, a, (p ? a / p : 0), b }'
done
