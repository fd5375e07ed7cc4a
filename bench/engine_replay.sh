#!/usr/bin/env bash
# Engine-log ingest: `inferwatch replay --engine-log` (with the shipped rules, and --no-rules) vs
# `mtail --one_shot` (bench/mtail/engine.mtail: the same figures) vs `grep -F -c` on a 1 M-line
# synthetic vLLM log of bench/gen_engine_log.py (LINES to change), side by side, in rounds
# (ROUNDS, default 3) within one run; the first round's replay and mtail outputs are checked
# against the log's ground truth (bench/check_counts.py). `inferwatch` is the install a host gets
# (bench/installed.py: the checkout in a venv of the distribution's python3; BENCH_PYTHON=checkout
# for the checkout's .venv); where .venv's interpreter is another one, its replay runs beside it
# (replay_checkout, for reference).
# Target (issue "Benchmarks"): replay at >= 15x the speed of mtail and <= 5x grep's time.
# JSON=F also writes the medians and every round to F (bench/run_all.py reads it).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
out=${BENCH_OUT:-bench/out}
rounds=${ROUNDS:-3}
lines=${LINES:-1000000}
mkdir -p "$out"
log="$out/engine-$lines.log"
[ -f "$log" ] || python3 bench/gen_engine_log.py "$log" "$lines" > /dev/null
command -v mtail > /dev/null || { apt-get install -y -q mtail > /dev/null; }
cat "$log" > /dev/null  # page cache warm for every contender
# Byte-compiled modules, as an installed package has them (pip compiles at install; an editable
# checkout under PYTHONDONTWRITEBYTECODE=1 would compile ~200 modules on every run otherwise).
py=$(.venv/bin/python bench/installed.py)
"$py" -m compileall -q daemon > /dev/null
iw="$(dirname "$py")/inferwatch"
echo "cores: $(nproc), load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

names=(mtail grep replay replay_no_rules)
interpreters=("replay=$(.venv/bin/python bench/installed.py --describe "$py")")
if [ "$(realpath "$py")" != "$(realpath .venv/bin/python)" ]; then
  names+=(replay_checkout)
  interpreters+=("replay_checkout=$(.venv/bin/python bench/installed.py --describe .venv/bin/python)")
fi
echo "inferwatch: ${interpreters[*]}"
for ((r = 1; r <= rounds; r++)); do
  timed mtail --one_shot --one_shot_format prometheus --progs bench/mtail --logs "$log" \
    > "$out/t.mtail.$r"
  [ "$r" -gt 1 ] || cp "$out/last.out" "$out/mtail.prom"
  timed env LC_ALL=C grep -F -c 'Avg generation throughput' "$log" > "$out/t.grep.$r"
  timed "$iw" replay --engine-log "$log" --format jsonl --year 2026 > "$out/t.replay.$r"
  [ "$r" -gt 1 ] || cp "$out/last.out" "$out/replay.jsonl"
  timed "$iw" replay --no-rules --engine-log "$log" --format jsonl --year 2026 \
    > "$out/t.replay_no_rules.$r"
  if [[ " ${names[*]} " == *" replay_checkout "* ]]; then
    timed .venv/bin/inferwatch replay --engine-log "$log" --format jsonl --year 2026 \
      > "$out/t.replay_checkout.$r"
    cmp -s "$out/last.out" "$out/replay.jsonl" || { echo "the .venv replay differs" >&2; exit 1; }
  fi
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
counts=ok
python3 bench/check_counts.py "$log.expected.json" "$out/replay.jsonl" "$out/mtail.prom" || counts=wrong

INTERPRETERS=$(printf '%s\n' "${interpreters[@]}") COUNTS=$counts JSON=${JSON:-} \
  python3 - "$out" "$rounds" "$(stat -c %s "$log")" "$lines" "${names[@]}" <<'PY'
import json
import os
import statistics
import sys

out, rounds, size, lines = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
names = sys.argv[5:]
runs = {
    n: [tuple(map(float, open(f"{out}/t.{n}.{r}").read().split())) for r in range(1, rounds + 1)]
    for n in names
}
wall = {n: statistics.median(w for w, _ in runs[n]) for n in names}
label = {
    "mtail": "mtail --one_shot",
    "grep": "grep -F -c",
    "replay": "inferwatch replay (rules)",
    "replay_no_rules": "inferwatch replay --no-rules",
    "replay_checkout": "replay (rules), .venv",
}
print(f"file: {size / 1e6:.0f} MB, {lines:,} lines; {rounds} rounds, median wall (all: wall/cpu)")
for n in names:
    each = "  ".join(f"{w:.2f}/{c:.2f}" for w, c in runs[n])
    print(f"{label[n]:<30} {wall[n]:6.2f} s   [{each}]")
for line in os.environ["INTERPRETERS"].splitlines():
    print(f"{label[line.split('=')[0]]}: {line.split('=', 1)[1]}")
for n in [n for n in ("replay", "replay_no_rules", "replay_checkout") if n in wall]:
    print(
        f"{label[n]}: {size / wall[n] / 1e6:.0f} MB/s, {wall['mtail'] / wall[n]:.1f}x mtail, "
        f"{wall[n] / wall['grep']:.2f}x grep's time"
    )
if os.environ.get("JSON"):
    doc = {n: {"median_wall_s": wall[n], "rounds": runs[n]} for n in names}
    doc.update(lines=lines, bytes=size, counts_ok=os.environ["COUNTS"] == "ok")
    doc["interpreters"] = dict(x.split("=", 1) for x in os.environ["INTERPRETERS"].splitlines())
    with open(os.environ["JSON"], "w") as f:
        json.dump(doc, f, indent=1)
PY
[ "$counts" = ok ]
