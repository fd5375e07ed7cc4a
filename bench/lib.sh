# Shell helpers shared by bench/engine_replay.sh, bench/compare_revs.sh, bench/rules_compare.sh
# and bench/replay_cpu.py --rev (sourced; they set $out before calling these).

# One contender, whole process: "wall user+sys" seconds (children included) to stdout.
# Output goes to a file: GNU grep stops at the first match when its output is /dev/null.
timed() {
  local TIMEFORMAT='%R %U %S' t
  t=$({ time "$@" > "$out/last.out" 2> "$out/last.err"; } 2>&1)
  awk '{ printf "%.2f %.2f\n", $1, $2 + $3 }' <<< "$t"
}

# Each commit's daemon/ and rules/ taken with `git archive` into $out/rev-<sha>/ (once) and
# byte-compiled; the short shas land in the array `revs`.
archive_revs() {
  revs=()
  local rev sha dir
  for rev in "$@"; do
    sha=$(git rev-parse --short=12 "$rev^{commit}")
    dir="$out/rev-$sha"
    if [ ! -d "$dir/daemon" ]; then
      mkdir -p "$dir"
      git archive "$sha" daemon rules | tar -x -C "$dir"
    fi
    .venv/bin/python -m compileall -q "$dir/daemon" > /dev/null
    revs+=("$sha")
  done
}
