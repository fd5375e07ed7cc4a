#!/usr/bin/env bash
# Instructions, not seconds: figure 1's command (`inferwatch replay --engine-log LOG --format
# jsonl --year 2026`, with the shipped rules) under valgrind's callgrind, for the replay process
# and its scan workers apart, on an empty log (the start-up: imports, rules) and on bench's
# 100,000-line log (LINES to change). The counts repeat to ~0.5 % whatever else the machine
# does, where wall times on these VMs swing by tens of percent: small changes are compared here
# and the figure is then timed as usual (bench/engine_replay.sh). ~25 s a run.
#   bash bench/replay_instructions.sh [REV ...]      (default: this checkout's package)
# Each REV's daemon/ and rules/ are taken with `git archive` (bench/lib.sh), run with this
# checkout's virtual environment.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
out=${BENCH_OUT:-bench/out}
lines=${LINES:-100000}
mkdir -p "$out"
command -v valgrind > /dev/null || { echo "valgrind is not installed (apt-get install valgrind)"; exit 0; }
log="$out/engine-$lines.log"
[ -f "$log" ] || python3 bench/gen_engine_log.py "$log" "$lines" > /dev/null
empty="$out/empty.log"
: > "$empty"
if [ $# -eq 0 ]; then
  .venv/bin/python -m compileall -q daemon > /dev/null
  dirs=("$PWD/daemon") names=(checkout)
else
  archive_revs "$@"
  dirs=() names=()
  for sha in "${revs[@]}"; do dirs+=("$PWD/$out/rev-$sha/daemon"); names+=("$sha"); done
fi

# "replay-process workers output-md5" in instructions for one run over $2 with package dir $1
count() {
  local dir=$1 input=$2 cg
  cg=$(mktemp -d)
  PYTHONPATH=$dir valgrind --tool=callgrind --callgrind-out-file="$cg/cg.%p" \
    .venv/bin/python -m inferwatch replay --engine-log "$input" --format jsonl --year 2026 \
    > "$cg/out" 2> "$cg/err"
  local first
  first=$(ls "$cg"/cg.* | sort -t. -k2 -n | head -1)
  awk '/^totals:/ { if (FILENAME == f) m += $2; else w += $2 } END { printf "%d %d ", m, w }' \
    f="$first" "$cg"/cg.*
  md5sum < "$cg/out" | cut -c1-12
  rm -rf "$cg"
}

echo "log: $log; millions of instructions (callgrind): the replay process, its scan workers"
printf "%-14s %10s %10s %10s %10s\n" rev start-up process per-log workers
for i in "${!dirs[@]}"; do
  read -r start _ _ <<< "$(count "${dirs[$i]}" "$empty")"
  read -r main workers md5 <<< "$(count "${dirs[$i]}" "$log")"
  awk -v n="${names[$i]}" -v s="$start" -v m="$main" -v w="$workers" -v o="$md5" \
    'BEGIN { printf "%-14s %10.1f %10.1f %10.1f %10.1f  output %s\n", n, s / 1e6, m / 1e6, (m - s) / 1e6, w / 1e6, o }'
done
