#!/usr/bin/env bash
# Kernel-log replay throughput: 1 M lines (99 % ordinary, 1 % NVRM/AER/OOM of the corpus shapes).
# Target (issue "Kernel log and Xid intelligence"): >= 300 k lines/s on the 2-core dev machine.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_OUT:-bench/out}
mkdir -p "$out"
.venv/bin/python bench/gen_kernel_log.py "$out/kernel-1m.log" 1000000 1
lines=$(wc -l < "$out/kernel-1m.log")
for run in 1 2 3; do
  start=$(date +%s.%N)
  .venv/bin/inferwatch replay --kernel "$out/kernel-1m.log" --format jsonl > "$out/kernel-1m.jsonl"
  end=$(date +%s.%N)
  python3 -c "import sys; s=float(sys.argv[2])-float(sys.argv[1]); n=int(sys.argv[3]); print(f'run $run: {n} lines in {s:.2f} s = {n/s/1000:.0f} k lines/s')" "$start" "$end" "$lines"
done
tail -1 "$out/kernel-1m.jsonl"
