#!/usr/bin/env python3
"""Start-up and shutdown with a day of state: ``inferwatch run`` to ``/healthz`` ready, SIGTERM
to exit, on a state directory holding a 24-h snapshot of 2 engines and 8 GPUs.

The snapshot is built honestly in two steps:

1. a seed daemon (8 fake GPUs polled every 2 s, 2 engines following logs of the generator's mix,
   the shipped rules) runs for a few seconds and is stopped: its own snapshot names every series
   a host like this has (names, labels, kinds) and the sources' checkpoints;
2. each of those series is stretched to what a daemon running for 24 h holds: samples every
   interval the seed showed (the GPU poll's 2 s; 10 s where it showed fewer than two samples)
   back over the store's retention for that metric (2 h by default, longer where a shipped rule
   reads further back, as ``rules.service`` asks the store), at most 24 h; values cycle through
   the seed's (counters keep rising). The store and the snapshot writer are the daemon's own
   (``SeriesStore.restore_series``, ``snapshot.capture``, ``snapshot.encode_and_write``).

Then ``--rounds`` rounds, each on a fresh copy of that snapshot: the time from ``Popen`` to the
first 200 of ``/healthz`` (polled every 5 ms), and from SIGTERM to the process's exit (it writes
its snapshot on the way out). Targets (issue "Benchmarks", item 8): < 1 s and < 2 s.

    .venv/bin/python bench/startup_shutdown.py [--rounds 5] [--json F] [--profile F]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from array import array
from datetime import datetime
from itertools import islice, pairwise
from pathlib import Path

import httpx
from benchlib import (
    INFERWATCH,
    compile_package,
    daemon,
    free_port,
    host_config,
    machine,
    median,
    source_log,
    wait_until,
    write_json,
)

from inferwatch.clock import SystemClock
from inferwatch.config.defaults import SHIPPED_RULES
from inferwatch.event import Kind
from inferwatch.rules.loader import load_rule_files
from inferwatch.rules.rule_paths import expand_rule_paths
from inferwatch.statedir import SNAPSHOT_FILE
from inferwatch.store import snapshot
from inferwatch.store.series import Series
from inferwatch.store.tsdb import DEFAULT_RETENTION_S, SeriesStore

DAY_S = 86400.0
ENGINE_LINES = 4000


def retention_by_metric() -> dict[str, float]:
    """What the shipped rules make the store keep, per metric (as rules.service asks it)."""
    paths, problems = expand_rule_paths([SHIPPED_RULES])
    rule_set, found = load_rule_files(paths)
    assert not problems and not found, problems + found
    return {name: need + 600.0 for name, need in rule_set.lookback_by_metric().items() if name}


def stretch(seed: Series, keep: float, now: float) -> Series:
    ts, vs = seed.samples()
    steps = sorted(b - a for a, b in pairwise(ts) if b > a)
    interval = min(max(steps[len(steps) // 2], 1.0), 60.0) if steps else 10.0
    n = int(min(keep, DAY_S) / interval)
    start = now - n * interval
    values = [v for v in vs if not math.isnan(v)] or [0.0]  # without staleness markers
    counter = seed.kind is Kind.COUNTER
    rise = max(values[-1] - values[0], 1.0) / len(values)
    out_t, out_v = array("d"), array("d")
    for i in range(n + 1):
        out_t.append(start + i * interval)
        out_v.append(values[0] + i * rise if counter else values[i % len(values)])
    return Series(seed.name, seed.labels, seed.kind, seed.carry_forward, out_t, out_v)


def build_state(work: Path) -> dict[str, object]:
    """A state dir in ``work/state`` with the 24-h snapshot; returns its facts."""
    src = source_log(ENGINE_LINES)
    with src.open("rb") as f:
        head = b"".join(islice(f, ENGINE_LINES))
    logs = [work / "e0.log", work / "e1.log"]
    for log in logs:
        log.write_bytes(head)
    config = host_config(logs)
    with daemon(config, work) as d:
        wait_until(lambda: d.metric("inferwatch_gpu_up") >= 8, 60, "8 GPUs up")
        time.sleep(6.0)  # three GPU polls: their interval shows in the snapshot
    path = work / "state" / SNAPSHOT_FILE
    seed_store = SeriesStore(SystemClock())
    restored = snapshot.restore(path, seed_store, time.time())
    assert restored.problem is None and restored.series, restored
    keep = retention_by_metric()
    now = time.time()
    store = SeriesStore(SystemClock(), retention_s=DAY_S)
    samples = 0
    for s in seed_store.all_series():
        day = stretch(s, keep.get(s.name, DEFAULT_RETENTION_S), now)
        samples += len(day.samples()[0])
        store.restore_series(day)
    snapshot.encode_and_write(path, snapshot.capture(store, restored.checkpoints, now))
    shutil.copyfile(path, work / "snapshot-24h.bin")
    return {"series": store.series_count(), "samples": samples,
            "snapshot_mb": round(path.stat().st_size / 2**20, 1),
            "longest_retention_h": round(max(keep.values(), default=0) / 3600, 1)}  # fmt: skip


def log_after(path: Path, since: float) -> list[str]:
    """The daemon's JSON log lines from wall time ``since`` on, as "+offset s event"."""
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            doc = json.loads(line)
            t = datetime.fromisoformat(doc["timestamp"].replace("Z", "+00:00")).timestamp()
        except (ValueError, KeyError, TypeError):
            continue
        if t >= since:
            out.append(f"+{t - since:.3f} s {doc.get('event')}")
    return out


def one_round(work: Path, profile: Path | None) -> tuple[float, float, list[str]]:
    """Seconds to ready, seconds from SIGTERM to exit, the daemon's log lines after SIGTERM."""
    shutil.copyfile(work / "snapshot-24h.bin", work / "state" / SNAPSHOT_FILE)
    port = free_port()
    cfg = (work / "config.yaml").read_text().split("\n", 1)[1]  # without the seed's listen
    path = work / "config-round.yaml"
    path.write_text(f"listen: 127.0.0.1:{port}\n{cfg}", encoding="utf-8")
    cmd = [str(INFERWATCH), "run", "--config", str(path), "--state-dir", str(work / "state")]
    if profile is not None:
        cmd = [sys.executable, "-m", "cProfile", "-o", str(profile), "-m", "inferwatch", *cmd[1:]]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    url = f"http://127.0.0.1:{port}/healthz"
    with (work / "round.log").open("wb") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            with httpx.Client(trust_env=False, timeout=2) as client:
                while True:
                    if proc.poll() is not None:
                        raise RuntimeError(f"daemon exited {proc.returncode}; see {work}")
                    try:
                        if client.get(url).status_code == 200:
                            break
                    except httpx.HTTPError:
                        pass
                    time.sleep(0.005)
            ready = time.perf_counter() - t0
            time.sleep(1.0)  # serving, as it would be when someone stops it
            t1, sigterm_at = time.perf_counter(), time.time()
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
            stopped = time.perf_counter() - t1
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return ready, stopped, log_after(work / "round.log", sigterm_at)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", type=Path, help="also write the results to this file")
    ap.add_argument("--profile", type=Path, help="one more round under cProfile, stats to F")
    args = ap.parse_args()
    compile_package()
    with tempfile.TemporaryDirectory(prefix="iw-startup-") as tmp:
        work = Path(tmp)
        facts = build_state(work)
        rounds = [one_round(work, None) for _ in range(args.rounds)]
        if args.profile:
            one_round(work, args.profile.resolve())
    doc = {
        "machine": machine(),
        "state": facts,
        "startup_s": [round(r[0], 3) for r in rounds],
        "shutdown_s": [round(r[1], 3) for r in rounds],
        "startup_median_s": round(median([r[0] for r in rounds]), 3),
        "shutdown_median_s": round(median([r[1] for r in rounds]), 3),
        "last_shutdown_log": rounds[-1][2] if rounds else [],
    }
    print(f"# start-up and shutdown, {doc['machine']}")
    print(f"state: {facts}")
    print(f"run -> /healthz 200: median {doc['startup_median_s']} s {doc['startup_s']}")
    print(f"SIGTERM -> exit:     median {doc['shutdown_median_s']} s {doc['shutdown_s']}")
    print("the last round's daemon log after SIGTERM:", *doc["last_shutdown_log"], sep="\n  ")
    write_json(args.json, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
