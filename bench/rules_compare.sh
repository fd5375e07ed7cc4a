#!/usr/bin/env bash
# Rule-evaluation cost of several commits side by side, in interleaved rounds: per round, mtail
# once, then for each commit `inferwatch replay` of bench's 1 M-line engine log (wall and CPU),
# the CPU its rule groups take in that replay (bench/rule_group_cpu.py) and bench/rules_eval.py
# (100 rules over 5,400 series, median per tick); the last commit's replay --no-rules too.
#   ROUNDS=5 bash bench/rules_compare.sh 85801a7 d15f900 HEAD
# Each commit's daemon/ and rules/ are taken with `git archive` into bench/out/rev-<sha>/ and run
# with this checkout's virtual environment and bench scripts (PYTHONPATH first), as
# bench/compare_revs.sh does. The replays' outputs are compared with the first commit's.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
[ $# -ge 1 ] || { echo "usage: $0 REV..." >&2; exit 2; }
out=${BENCH_OUT:-bench/out}
rounds=${ROUNDS:-5}
lines=${LINES:-1000000}
mkdir -p "$out"
log="$out/engine-$lines.log"
[ -f "$log" ] || python3 bench/gen_engine_log.py "$log" "$lines" > /dev/null
archive_revs "$@"
cat "$log" > /dev/null
echo "revs: ${revs[*]}; cores: $(nproc); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
res="$out/rules-compare"
rm -rf "$res" && mkdir -p "$res"
last=${revs[-1]}
for ((r = 1; r <= rounds; r++)); do
  echo "round $r, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  timed mtail --one_shot --one_shot_format prometheus --progs bench/mtail --logs "$log" \
    > "$res/mtail.$r"
  for sha in "${revs[@]}"; do
    pp="$out/rev-$sha/daemon"
    timed env PYTHONPATH="$pp" .venv/bin/python -m inferwatch replay \
      --engine-log "$log" --format jsonl --year 2026 > "$res/replay-$sha.$r"
    cp "$out/last.out" "$res/replay-$sha.jsonl"
    PYTHONPATH="$pp" .venv/bin/python bench/rule_group_cpu.py "$log" --json "$res/groups-$sha.$r.json" \
      > /dev/null
    PYTHONPATH="$pp" .venv/bin/python bench/rules_eval.py --json "$res/eval-$sha.$r.json" > /dev/null
  done
  timed env PYTHONPATH="$out/rev-$last/daemon" .venv/bin/python -m inferwatch replay \
    --engine-log "$log" --format jsonl --year 2026 --no-rules > "$res/norules.$r"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
.venv/bin/python - "$res" "$rounds" "${revs[@]}" <<'PY'
import json
import statistics
import sys

res, rounds, revs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rr = range(1, rounds + 1)


def pairs(name):
    return [tuple(map(float, open(f"{res}/{name}.{r}").read().split())) for r in rr]


mtail = pairs("mtail")
norules = pairs("norules")
m = statistics.median(w for w, _ in mtail)
nr = statistics.median(w for w, _ in norules)
print(f"mtail wall {m:.2f} s [{' '.join(f'{w:.2f}' for w, _ in mtail)}]")
print(f"replay --no-rules ({revs[-1]}): {nr:.2f} s wall, {m / nr:.1f}x mtail")
for sha in revs:
    rep = pairs(f"replay-{sha}")
    groups = [json.load(open(f"{res}/groups-{sha}.{r}.json")) for r in rr]
    evals = [json.load(open(f"{res}/eval-{sha}.{r}.json")) for r in rr]
    w = statistics.median(x for x, _ in rep)
    c = statistics.median(y for _, y in rep)
    g = [x["cpu_s"] for x in groups]
    eng = [x["groups"]["inferwatch-engine"] for x in groups]
    per = statistics.median(e["cpu_s"] / e["evaluations"] * 1e6 for e in eng)
    ticks = [e["median_ms"] for e in evals]
    print(f"{sha}: replay {w:.2f} s wall ({m / w:.1f}x mtail), {c:.2f} CPU-s "
          f"[{' '.join(f'{x:.2f}/{y:.2f}' for x, y in rep)}]; rule groups "
          f"{statistics.median(g):.3f} CPU-s [{' '.join(f'{x:.3f}' for x in g)}], "
          f"inferwatch-engine {per:.0f} us per evaluation; rules_eval "
          f"{statistics.median(ticks):.1f} ms per tick [{' '.join(f'{x:.1f}' for x in ticks)}]")
PY
first=${revs[0]}
for sha in "${revs[@]:1}"; do
  if cmp -s "$res/replay-$first.jsonl" "$res/replay-$sha.jsonl"; then
    echo "replay output $sha: byte-identical to $first's"
  else
    echo "replay output $sha: differs from $first's"
  fi
done
