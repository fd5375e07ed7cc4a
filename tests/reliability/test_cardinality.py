"""Hardening item 6: series born from log content and from rules are bounded by `limits:`.

25,000 stats lines ``Engine <N>: …`` with distinct N made 150,000 series and 25,001
``EngineStalled`` alerts; one SpecDecoding line with a 5,000-entry per-position list made 5,000
series; a recording rule feeding on itself reached a million series. Each is now stopped at its
limit: the new series are dropped and counted (``inferwatch_series_dropped_total{reason}``),
one ``InferwatchSeriesDropped`` alert per reason says so, and the daemon keeps answering.
Real daemon, real files, loopback only.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import wait_until
from inferwatch.config.defaults import SERIES_PER_METRIC
from integration.daemon_proc import DaemonProc, start_daemon

ENGINES = 25_000
POSITIONS = 5_000
STATS = (
    "Engine {n:03d}: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 "
    "tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%, "
    "Prefix cache hit rate: 0.0%\n"
)
SPEC = (
    "SpecDecoding metrics: Mean acceptance length: 2.00, Accepted throughput: 1.00 tokens/s, "
    "Drafted throughput: 2.00 tokens/s, Accepted: 100 tokens, Drafted: {d} tokens, "
    "Per-position acceptance rate: {p}, Avg Draft acceptance rate: 50.0%\n"
)
SELF_FEEDING = """\
groups:
  - name: runaway
    interval: 1s
    rules:
      - record: feed
        expr: >-
          label_replace(feed, "g", "${1}a", "g", "(.*)")
          or label_replace(feed, "g", "${1}b", "g", "(.*)")
          or vector(1)
"""


def series_of(metrics: str, name: str) -> list[str]:
    return [line for line in metrics.splitlines() if re.match(rf"{name}[{{ ]", line)]


def dropped(metrics: str) -> dict[str, float]:
    found = {}
    for line in series_of(metrics, "inferwatch_series_dropped_total"):
        reason = re.search(r'reason="([^"]+)"', line)
        assert reason is not None, line
        found[reason.group(1)] = float(line.split()[-1])
    return found


def alerts(d: DaemonProc, name: str) -> list[dict[str, Any]]:
    return [a for a in d.get("/api/v1/alerts").json()["alerts"] if a["labels"]["alertname"] == name]


def config(tmp: Path, body: str) -> Path:
    path = tmp / "c.yaml"
    path.write_text("gpus: {backend: 'off'}\nkernel: {source: 'off'}\n" + body)
    return path


@pytest.mark.integration
def test_log_content_cannot_make_unbounded_series(tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    log.write_text("")
    cfg = config(tmp_path, f"engines: [{{name: e, log: '{log}'}}]\n")
    d = start_daemon(tmp_path, "--config", str(cfg))
    try:
        d.wait_ready()
        with log.open("a") as f:
            for n in range(ENGINES):
                f.write(STATS.format(n=n))
            f.write(STATS.format(n=0))
            positions = ", ".join(["0.500"] * POSITIONS)
            f.write(SPEC.format(d=POSITIONS * 100, p=positions))

        def read_all() -> str | None:
            try:  # reading 25,000 lines keeps the loop busy for seconds on a slow machine
                m = d.metrics()
            except httpx.TimeoutException:
                return None
            return (
                m
                if dropped(m).get("label_values", 0) > 0
                and series_of(m, "inferwatch_engine_spec_position_acceptance_ratio")
                else None
            )

        metrics = wait_until(read_all, 90, "the flood and the SpecDecoding line to be read")
        running = series_of(metrics, "inferwatch_engine_requests_running")
        ranks = {re.search(r'dp_rank="(\d+)"', line).group(1) for line in running}  # type: ignore[union-attr]
        assert 1 <= len(ranks) <= 64, len(ranks)  # today: 25,000
        positions_seen = series_of(metrics, "inferwatch_engine_spec_position_acceptance_ratio")
        assert 1 <= len(positions_seen) <= 32, len(positions_seen)  # today: 5,000
        status = d.get("/api/v1/status").json()
        assert status["store"]["series"] < 2_000, status["store"]
        limits = status["limits"]
        assert limits["label_values"]["dp_rank"]["limit"] == 64
        assert limits["label_values"]["dp_rank"]["most"] == 64
        assert limits["label_values"]["position"]["most"] == 32
        assert limits["dropped"]["label_values"] >= ENGINES - 64
        wait_until(lambda: alerts(d, "InferwatchSeriesDropped"), 30, "the overflow alert")
        [overflow] = alerts(d, "InferwatchSeriesDropped")  # one alert, not one per series
        assert overflow["labels"]["reason"] == "label_values"
        assert len(alerts(d, "EngineStalled")) <= 64
        assert "limit reached" in d.log()
        assert "Traceback" not in d.log()
    finally:
        code, _ = d.terminate()
    assert code == 0, d.log()


@pytest.mark.integration
def test_a_self_feeding_recording_rule_is_stopped_at_the_limit(tmp_path: Path) -> None:
    rules = tmp_path / "runaway.yaml"
    rules.write_text(SELF_FEEDING)
    cfg = config(
        tmp_path,
        f"rule_files: ['builtin:rules/*.yaml', '{rules}']\n",  # the default limits
    )
    d = start_daemon(tmp_path, "--config", str(cfg))
    try:
        d.wait_ready()

        def at_limit() -> str | None:
            metrics = d.metrics()
            return metrics if dropped(metrics).get("series_per_metric") else None

        metrics = wait_until(at_limit, 60, "the rule to reach the limit")
        # it doubles every second: without a limit, 2**20 series in twenty seconds
        first = dropped(metrics)["series_per_metric"]
        wait_until(
            lambda: dropped(d.metrics()).get("series_per_metric", 0) > first, 30, "more drops"
        )
        status = d.get("/api/v1/status").json()
        largest = status["limits"]["series_per_metric"]["largest"][0]
        assert largest == {"metric": "feed", "series": SERIES_PER_METRIC}, largest  # stopped
        assert status["store"]["series"] < SERIES_PER_METRIC + 1_000
        wait_until(lambda: alerts(d, "InferwatchSeriesDropped"), 30, "the overflow alert")
        [overflow] = alerts(d, "InferwatchSeriesDropped")
        assert overflow["labels"]["reason"] == "series_per_metric"
        assert "Traceback" not in d.log()
    finally:
        code, _ = d.terminate()
    assert code == 0, d.log()
