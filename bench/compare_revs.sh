#!/usr/bin/env bash
# Two commits of inferwatch side by side, in one run: the engine-log ingest benchmark
# (bench/engine_replay.sh's contenders, each round running mtail, grep and both commits' replay
# back to back) and the notification-latency benchmark (bench/notify_latency.py with each
# commit's package, one after the other). For a restructuring that must not cost speed:
#   bash bench/compare_revs.sh 26b9470 HEAD
# Each commit's daemon/ and rules/ are taken with `git archive` into bench/out/rev-<sha>/ and run
# with this checkout's virtual environment (PYTHONPATH first), on bench's own generated log
# (LINES lines, default 1 M) and mtail program. ROUNDS (default 5) rounds of the
# ingest; NOTIFY=0 skips the latency part (which needs root for /dev/kmsg, ~3.5 min a commit).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
[ $# -eq 2 ] || { echo "usage: $0 REV_A REV_B" >&2; exit 2; }
out=${BENCH_OUT:-bench/out}
rounds=${ROUNDS:-5}
lines=${LINES:-1000000}
mkdir -p "$out"
log="$out/engine-$lines.log"
[ -f "$log" ] || python3 bench/gen_engine_log.py "$log" "$lines" > /dev/null
command -v mtail > /dev/null || { apt-get install -y -q mtail > /dev/null; }
archive_revs "$1" "$2"
cat "$log" > /dev/null
echo "revs: ${revs[*]}; cores: $(nproc); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

names=(mtail grep)
for sha in "${revs[@]}"; do names+=("replay-$sha"); done
for ((r = 1; r <= rounds; r++)); do
  timed mtail --one_shot --one_shot_format prometheus --progs bench/mtail --logs "$log" \
    > "$out/t.mtail.$r"
  timed env LC_ALL=C grep -F -c 'Avg generation throughput' "$log" > "$out/t.grep.$r"
  for sha in "${revs[@]}"; do
    timed env PYTHONPATH="$out/rev-$sha/daemon" .venv/bin/python -m inferwatch replay \
      --engine-log "$log" --format jsonl --year 2026 > "$out/t.replay-$sha.$r"
    cp "$out/last.out" "$out/replay-$sha.jsonl"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" "$rounds" "${names[@]}" <<'PY'
import statistics
import sys

out, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
runs = {n: [tuple(map(float, open(f"{out}/t.{n}.{r}").read().split()))
            for r in range(1, rounds + 1)] for n in names}
wall = {n: statistics.median(w for w, _ in runs[n]) for n in names}
print(f"{rounds} rounds, median wall (all: wall/cpu)")
for n in names:
    print(f"{n:<24} {wall[n]:6.2f} s   [{'  '.join(f'{w:.2f}/{c:.2f}' for w, c in runs[n])}]")
for n in names[2:]:
    print(f"{n}: {wall['mtail'] / wall[n]:.1f}x mtail, {wall['grep'] / wall[n]:.2f}x grep")
PY
if cmp -s "$out/replay-${revs[0]}.jsonl" "$out/replay-${revs[1]}.jsonl"; then
  echo "replay output: byte-identical"
else
  echo "replay output: differs (diff $out/replay-${revs[0]}.jsonl $out/replay-${revs[1]}.jsonl)"
fi
if [ "${NOTIFY:-1}" != 0 ]; then
  for sha in "${revs[@]}"; do
    echo "notification latency, $sha:"
    .venv/bin/python bench/notify_latency.py --daemon-path "$out/rev-$sha/daemon" \
      --out "$out/notify_latency-$sha.json"
  done
fi
