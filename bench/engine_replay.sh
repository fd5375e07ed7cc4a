#!/usr/bin/env bash
# Engine-log ingest: `inferwatch replay --engine-log` vs `mtail --one_shot` vs `grep -F -c`
# on the 1 M-line synthetic vLLM log of ../shared/bench/gen_vllm_log.py, side by side, one run.
# Target (issue "Engine pipeline"): replay at >= 10x the speed of mtail.
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${SHARED:-../shared}
out=${BENCH_OUT:-bench/out}
mkdir -p "$out"
log="$out/vllm-1m.log"
[ -f "$log" ] || python3 "$shared/bench/gen_vllm_log.py" "$log" 1000000 > /dev/null
command -v mtail > /dev/null || { apt-get install -y -q mtail > /dev/null; }
cat "$log" > /dev/null  # page cache warm for every contender
# Output goes to a file: GNU grep stops at the first match when its output is /dev/null.
secs() { local s e; s=$(date +%s.%N); "$@" > "$out/last.out"; e=$(date +%s.%N); python3 -c "print(f'{$e-$s:.2f}')"; }
t_mtail=$(secs mtail --one_shot --one_shot_format prometheus --progs "$shared/bench/mtail" --logs "$log")
t_grep=$(secs env LC_ALL=C grep -F -c 'Avg generation throughput' "$log")
t_iw=$(secs .venv/bin/inferwatch replay --engine-log "$log" --format jsonl --year 2026)
python3 - "$t_mtail" "$t_grep" "$t_iw" "$(stat -c %s "$log")" <<'PY'
import sys
mtail, grep, iw, size = map(float, sys.argv[1:])
print(f"file: {size / 1e6:.0f} MB, 1,000,000 lines")
print(f"mtail --one_shot: {mtail:.2f} s")
print(f"grep -F -c:       {grep:.2f} s")
print(f"inferwatch replay: {iw:.2f} s  ({size / iw / 1e6:.0f} MB/s)")
print(f"speed vs mtail: {mtail / iw:.1f}x   vs grep: {grep / iw:.2f}x")
PY
