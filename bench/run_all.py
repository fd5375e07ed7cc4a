#!/usr/bin/env python3
"""Every figure of the issue "Benchmarks" in one run, ending with one table:
figure | inferwatch | anchor | ratio | target | met?

    .venv/bin/python bench/run_all.py [--quick] [--out DIR] [--only ingest,idle,...]

It runs under the install a host gets (bench/installed.py: a venv made by the distribution's
python3 with the checkout installed; ``BENCH_PYTHON=checkout`` keeps the checkout's ``.venv``):
started by another interpreter, it starts itself again with that venv's python, so every
figure's script and daemon run with it. ``make bench`` runs it in full (the medians of 5 rounds
where a figure is a run time: ingest, rule evaluation, NVML cost, start-up; 50 trials, 300
scrapes, 300 s idle, 60 s per live rate);
``make bench-quick`` with ``--quick`` (one round, smaller inputs, a couple of minutes). Each
figure is its own script in bench/ writing JSON (``--json F``); this collects them into
``DIR/results.json`` and ``DIR/table.md`` and prints the table. It appends to nothing else
(bench/RESULTS.md is written by hand from a run). A figure that needs root or a tool that is
missing says so in its row instead of a number; a script that fails says so too and the others
still run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlib import REPO, compile_package, machine
from installed import installed_python

PY = sys.executable
BENCH = REPO / "bench"
Row = tuple[str, str, str, str, str, str]  # figure, inferwatch, anchor, ratio, target, met?


@dataclass
class Figure:
    name: str
    runs: Callable[[bool, Path], list[list[str] | tuple[dict[str, str], list[str]]]]
    rows: Callable[[list[Any]], list[Row]]
    needs: Callable[[], str | None] = lambda: None


def met(ok: bool) -> str:
    return "yes" if ok else "**no**"


def ms(v: float) -> str:
    return f"{v:.1f} ms"


# -- what each figure runs (full or quick) and how its JSON becomes rows ---------------------------
def ingest_runs(quick: bool, out: Path) -> list[Any]:
    lines = "100000" if quick else "1000000"
    env = {"ROUNDS": "1" if quick else "5", "LINES": lines, "JSON": str(out)}
    log = BENCH / "out" / f"engine-{lines}.log"  # engine_replay.sh writes it first
    split = [PY, str(BENCH / "replay_cpu.py"), str(log), "--rounds", "1" if quick else "3"]
    return [(env, ["bash", str(BENCH / "engine_replay.sh")]),
            [*split, "--json", str(out.with_suffix(".cpu.json"))],
            [*split, "--phases", "--json", str(out.with_suffix(".phases.json"))]]  # fmt: skip


def ingest_rows(docs: list[Any]) -> list[Row]:
    d = docs[0]
    iw, mt, gr = (d[n]["median_wall_s"] for n in ("replay", "mtail", "grep"))
    nr = d["replay_no_rules"]["median_wall_s"]
    rounds = len(d["replay"]["rounds"])
    lines = f"{d['lines']:,} lines, {rounds} rounds, {d['interpreters']['replay']}"
    lines += "" if d["counts_ok"] else ", COUNTS WRONG"
    return [
        (f"1. ingest, replay with shipped rules ({lines})", f"{iw:.2f} s",
         f"mtail --one_shot {mt:.2f} s", f"{mt / iw:.1f}× faster", "≥ 15×",
         met(mt / iw >= 15 and d["counts_ok"])),
        ("1. ingest, replay vs grep -F -c", f"{iw:.2f} s", f"grep {gr:.2f} s",
         f"{iw / gr:.1f}× grep's time", "≤ 5×", met(iw / gr <= 5)),
        ("1. ingest, replay --no-rules (for reference)", f"{nr:.2f} s", f"mtail {mt:.2f} s",
         f"{mt / nr:.1f}× faster", "—", "—"),
        *checkout_rows(d),
        *cpu_rows(docs[1:2]),
        *phase_rows(docs[2:]),
    ]  # fmt: skip


def checkout_rows(d: dict[str, Any]) -> list[Row]:
    """The same replay under the checkout's .venv, where its interpreter is another one."""
    if "replay_checkout" not in d:
        return []
    co, mt, gr = (d[n]["median_wall_s"] for n in ("replay_checkout", "mtail", "grep"))
    which = d["interpreters"]["replay_checkout"]
    return [(f"1. ingest, replay with shipped rules, checkout .venv: {which} (for reference)",
             f"{co:.2f} s", f"mtail {mt:.2f} s, grep {gr:.2f} s",
             f"{mt / co:.1f}× faster, {co / gr:.1f}× grep's time", "—", "—")]  # fmt: skip


def cpu_rows(docs: list[Any]) -> list[Row]:
    """Where the replay's CPU goes (bench/replay_cpu.py): the replay process, which applies
    the records in order and bounds the wall time, and the scan workers."""
    if not docs:
        return []
    rules, plain = (docs[0][k]["median"] for k in ("rules", "no_rules"))
    return [("1. ingest, where the CPU goes (replay_cpu.py, medians)",
             f"replay process {rules['replay_process_cpu_s']:.2f} CPU-s "
             f"({plain['replay_process_cpu_s']:.2f} with --no-rules), scan workers "
             f"{rules['scan_workers_cpu_s']:.2f}", "—", "—", "—", "—")]  # fmt: skip


def phase_rows(docs: list[Any]) -> list[Row]:
    """The replay process's CPU step by step (``replay_cpu.py --phases``, timers on)."""
    if not docs:
        return []
    m = docs[0]["median"]
    names = ("startup", "records", "ticks", "rules", "rest", "other_threads")
    steps = ", ".join(f"{name.replace('_', ' ')} {m[name]:.2f}" for name in names)
    return [("1. ingest, the replay process step by step (replay_cpu.py --phases, CPU-s)", steps,
             "—", "—", "—", "—")]  # fmt: skip


def ingest_needs() -> str | None:
    if shutil.which("mtail") or os.geteuid() == 0:
        return None
    return "needs mtail (Debian package mtail; root to install it)"


def live_runs(quick: bool, out: Path) -> list[Any]:
    seconds = "4" if quick else "60"
    return [[PY, str(BENCH / "live_ingest.py"), "--seconds", seconds, "--json", str(out)]]


def live_rows(docs: list[Any]) -> list[Row]:
    rows: list[Row] = []
    for r in docs[0]:
        what = f"{r['lines']:,} lines, {r['cpu_seconds_per_1000_lines']} CPU-s per 1,000"
        if r["rate"] <= 1000:
            ok = r["core_percent"] <= 2 and not r["dropped"]
            rows.append((f"2. live ingest {r['rate']:,} lines/s ({what})",
                         f"{r['core_percent']} % of a core", "— (6.0 % before)", "—",
                         "≤ 2 % of a core", met(ok)))  # fmt: skip
        else:
            keeps = r["catch_up_seconds"] < 2 and not r["dropped"]
            rows.append((f"2. live ingest {r['rate']:,} lines/s ({what})",
                         f"{r['core_percent']} % of a core, lag {r['lag_lines_at_stop']:,} lines, "
                         f"caught up in {r['catch_up_seconds']} s, dropped {r['dropped']}",
                         "—", "—", "keeps up, nothing dropped", met(keeps)))  # fmt: skip
    return rows


def alert_runs(quick: bool, out: Path) -> list[Any]:
    n = ["--trials", "2", "--side-trials", "2", "--crash-trials", "1"] if quick else []
    return [[PY, str(BENCH / "notify_latency.py"), *n, "--json", str(out)]]


def alert_needs() -> str | None:
    if not (os.geteuid() == 0 and os.access("/dev/kmsg", os.W_OK)):
        return "needs root and a writable /dev/kmsg"
    missing = [t for t in ("prometheus", "prometheus-alertmanager") if not shutil.which(t)]
    return f"needs {', '.join(missing)} (Debian packages)" if missing else None


def alert_rows(docs: list[Any]) -> list[Row]:
    d = docs[0]
    paths = d["paths_ms"]
    iw = paths.get("inferwatch (side by side, scraped at 1 s)") or paths["inferwatch (alone)"]
    am = next((v for k, v in paths.items() if k.startswith("prometheus")), None)
    ring = f"ring {d['ring_records']:,} records"
    rows: list[Row] = []
    if am and am.get("n"):
        ratio = am["p99"] / iw["p99"]
        rows.append((f"3. alert latency, kmsg Xid → webhook, p99 ({iw['n']} trials, {ring})",
                     ms(iw["p99"]) + f" (p50 {iw['median']:.1f})",
                     f"Prometheus+Alertmanager 1 s: {ms(am['p99'])} (p50 {am['median']:.0f})",
                     f"{ratio:.0f}× faster", "p99 ≤ 50 ms, ≥ 20×",
                     met(iw["p99"] <= 50 and ratio >= 20 and not iw["timeouts"])))  # fmt: skip
    crash = next((v for k, v in paths.items() if "crash" in k), None)
    if crash and crash.get("n"):
        rows.append((f"3. alert latency, engine crash line → webhook, p99 ({crash['n']} trials)",
                     ms(crash["p99"]) + f" (p50 {crash['median']:.0f})", "—", "—",
                     "≤ 5 s (crash_window; decided by design)",
                     met(crash["p99"] <= 5000 and not crash["timeouts"])))  # fmt: skip
    return rows


def idle_runs(quick: bool, out: Path) -> list[Any]:
    seconds = "30" if quick else "300"
    return [[PY, str(BENCH / "idle_cost.py"), "--seconds", seconds, "--json", str(out)]]


def idle_rows(docs: list[Any]) -> list[Row]:
    d = docs[0]
    iw, ne = d["inferwatch"], d["node_exporter"]
    s = f"{d['seconds']:.0f} s"
    if ne is None:
        ne_cpu = ne_rss = "node_exporter missing (Debian prometheus-node-exporter; root)"
        r_cpu = r_rss = "—"
    else:
        ne_cpu, ne_rss = f"{ne['core_percent']} %", f"{ne['peak_rss_mb']} MB"
        r_cpu = f"{iw['core_percent'] / ne['core_percent']:.2f}× node_exporter's"
        r_rss = f"{iw['peak_rss_mb'] / ne['peak_rss_mb']:.1f}× node_exporter's"
    return [
        (f"4. idle CPU ({s}, 8 fake GPUs, 1 line/s, 1 scrape/s)",
         f"{iw['core_percent']} % of a core", ne_cpu, r_cpu, "≤ 0.5 % of a core",
         met(iw["core_percent"] <= 0.5)),
        ("4. idle peak RSS", f"{iw['peak_rss_mb']} MB", ne_rss, r_rss, "≤ 60 MB",
         met(iw["peak_rss_mb"] <= 60)),
    ]  # fmt: skip


def scrape_runs(quick: bool, out: Path) -> list[Any]:
    n = "100" if quick else "300"
    return [[PY, str(BENCH / "scrape_latency.py"), "--scrapes", n, "--json", str(out)]]


def scrape_rows(docs: list[Any]) -> list[Row]:
    d = docs[0]
    iw, ne = d["inferwatch"], d["node_exporter"]
    anchor = (f"node_exporter {ms(ne['p99_ms'])} (p50 {ne['p50_ms']})" if ne
              else "node_exporter missing")  # fmt: skip
    ratio = f"{ne['p99_ms'] / iw['p99_ms']:.2f}× faster" if ne else "—"
    return [(f"5. /metrics scrape p99 ({iw['n']} scrapes, 8 GPUs, 2 engines, {iw['bytes']:,} B)",
             ms(iw["p99_ms"]) + f" (p50 {iw['p50_ms']})", anchor, ratio, "p99 < 10 ms",
             met(iw["p99_ms"] < 10))]  # fmt: skip


def rules_runs(quick: bool, out: Path) -> list[Any]:
    rounds = 1 if quick else 5
    return [[PY, str(BENCH / "rules_eval.py"), "--json", f"{out}.{i}"] for i in range(rounds)]


def rules_rows(docs: list[Any]) -> list[Row]:
    wall = statistics.median(d["median_ms"] for d in docs)
    cpu = statistics.median(d["cpu_median_ms"] for d in docs)
    d = docs[0]
    return [(f"6. rule evaluation, {d['rules']} rules over {d['series']:,} series "
             f"(median of {len(docs)})", f"{wall:.1f} ms per tick (CPU {cpu:.1f})", "—", "—",
             "< 20 ms", met(wall < 20))]  # fmt: skip


def nvml_runs(quick: bool, out: Path) -> list[Any]:
    rounds, cycles = (1, "100") if quick else (5, "500")
    return [[PY, str(BENCH / "nvml_cost.py"), cycles, "--json", f"{out}.{i}"]
            for i in range(rounds)]  # fmt: skip


def nvml_rows(docs: list[Any]) -> list[Row]:
    cpu = statistics.median(d["cpu_median_ms"] for d in docs)
    real = ("real GPU: bench/gpu_check.sh (needs a GPU machine)" if not shutil.which("nvidia-smi")
            else "real GPU: run bench/gpu_check.sh")  # fmt: skip
    return [(f"7. NVML poll, 8 fake GPUs (median of {len(docs)})", f"{cpu:.2f} ms CPU per cycle",
             real, "—", "< 5 ms", met(cpu < 5))]  # fmt: skip


def startup_runs(quick: bool, out: Path) -> list[Any]:
    rounds = "1" if quick else "5"
    return [[PY, str(BENCH / "startup_shutdown.py"), "--rounds", rounds, "--json", str(out)]]


def startup_rows(docs: list[Any]) -> list[Row]:
    d = docs[0]
    st = d["state"]
    what = f"{st['series']} series, {st['samples']:,} samples, {st['snapshot_mb']} MB snapshot"
    n = len(d["startup_s"])
    return [
        (f"8. start-up to /healthz, 24 h state ({what}; median of {n})",
         f"{d['startup_median_s']:.2f} s", "—", "—", "< 1 s", met(d["startup_median_s"] < 1)),
        ("8. SIGTERM to exit (writes its snapshot)", f"{d['shutdown_median_s']:.2f} s", "—", "—",
         "< 2 s", met(d["shutdown_median_s"] < 2)),
    ]  # fmt: skip


FIGURES = [
    Figure("ingest", ingest_runs, ingest_rows, ingest_needs),
    Figure("live", live_runs, live_rows),
    Figure("alert", alert_runs, alert_rows, alert_needs),
    Figure("idle", idle_runs, idle_rows),
    Figure("scrape", scrape_runs, scrape_rows),
    Figure("rules", rules_runs, rules_rows),
    Figure("nvml", nvml_runs, nvml_rows),
    Figure("startup", startup_runs, startup_rows),
]


def run_figure(fig: Figure, quick: bool, out_dir: Path) -> tuple[list[Row], float]:
    started = time.monotonic()
    reason = fig.needs()
    if reason:
        return [(fig.name, reason, "—", "—", "—", "not run")], 0.0
    target = out_dir / f"{fig.name}.json"
    docs = []
    for cmd in fig.runs(quick, target):
        env, argv = cmd if isinstance(cmd, tuple) else ({}, cmd)
        json_path = Path(argv[-1]) if "--json" in argv else Path(env["JSON"])
        log = out_dir / f"{fig.name}.log"
        print(f"## {fig.name}: {' '.join(argv[1:] if argv[0] == PY else argv)}", flush=True)
        with log.open("a") as f:
            done = subprocess.run(argv, cwd=REPO, env={**os.environ, **env}, stdout=f,
                                  stderr=subprocess.STDOUT, check=False)  # fmt: skip
        if not json_path.exists():
            tail = log.read_text(errors="replace").strip().splitlines()[-1:]
            why = f"failed (exit {done.returncode}): {' '.join(tail)[:120]}; see {log}"
            return [(fig.name, why, "—", "—", "—", "not run")], time.monotonic() - started
        docs.append(json.loads(json_path.read_text()))
    try:
        rows = fig.rows(docs)
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
        rows = [(fig.name, f"results unreadable: {exc!r}", "—", "—", "—", "not run")]
    return rows, time.monotonic() - started


def table(rows: list[Row]) -> str:
    out = ["| figure | inferwatch | anchor | ratio | target | met? |", "|---|---|---|---|---|---|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one round, smaller inputs")
    ap.add_argument("--out", type=Path, help="results folder (default bench/out/run-…)")
    ap.add_argument("--only", help="comma-separated figures: " + ",".join(f.name for f in FIGURES))
    args = ap.parse_args()
    python = installed_python()
    if os.environ.get("BENCH_INSTALLED") != str(python):  # once: the install's own python
        env = {**os.environ, "BENCH_INSTALLED": str(python)}
        os.execve(python, [str(python), __file__, *sys.argv[1:]], env)  # noqa: S606 (no shell)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    out_dir = args.out or BENCH / "out" / f"run-{stamp}{'-quick' if args.quick else ''}"
    for old in out_dir.glob("*.json*"):  # a rerun into the same folder starts clean
        old.unlink()
    out_dir.mkdir(parents=True, exist_ok=True)
    chosen = set(args.only.split(",")) if args.only else {f.name for f in FIGURES}
    compile_package()
    before = machine()
    print(f"# make bench{'-quick' if args.quick else ''}: {before}", flush=True)
    rows: list[Row] = []
    took: dict[str, float] = {}
    for fig in FIGURES:
        if fig.name in chosen:
            got, took[fig.name] = run_figure(fig, args.quick, out_dir)
            rows += got
    after = machine()
    text = table(rows)
    header = f"started {before}; ended {after}; quick={args.quick}"
    (out_dir / "table.md").write_text(header + "\n\n" + text + "\n", encoding="utf-8")
    doc = {"started": before, "ended": after, "quick": args.quick, "seconds": took, "rows": rows}
    (out_dir / "results.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print()
    print(header)
    print(text)
    print(f"\nresults: {out_dir}/ (each figure's log and JSON)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
