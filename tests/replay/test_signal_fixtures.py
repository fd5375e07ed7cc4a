"""Signal quality on real logs that people pasted in public issue trackers (tests/fixtures/signal,
provenance in its SOURCES.md): `inferwatch replay` on every healthy excerpt raises no alert, and
on every fault excerpt exactly the alerts an operator would want paged.

Excerpts whose expectation the daemon does not meet yet are strict xfails naming the part of the
signal-quality issue that will meet it: one that starts passing fails the suite until its mark is
removed, so this table is always the truth about what the daemon gets right."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from inferwatch.cli import main

SIGNAL = Path(__file__).resolve().parents[1] / "fixtures" / "signal"


def todo(item: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=f"signal-quality issue, {item}")


EXPECTED: list[Any] = [
    # healthy: never page
    ("engine-healthy-idle-gap-then-traffic.log", set()),
    ("engine-healthy-agentic-docker-ts.log", set()),
    ("engine-healthy-prefill-heavy-docker-ts.log", set()),
    ("engine-healthy-specdecode-dual4090.log", set()),
    ("engine-healthy-specdecode-agentic-openclaw.log", set()),
    ("engine-sglang-prefill-cache-hit-rate.log", set()),
    ("engine-sglang-prefill-decode-healthy.log", set()),
    ("kernel-healthy-driver-load-8gpu.log", set()),
    # faults
    ("engine-hang-nccl-shm-broadcast.log", {"EngineStalled"}),
    ("engine-crash-cuda-oom-gpu3.log", {"EngineCrashed"}),
    ("kernel-noxid-fallen-off-bus.log", {"GpuFallenOffBus"}),
    ("kernel-aer-fatal-surprise-down-xid79.log", {"GpuFallenOffBus"}),
    ("kernel-ts-dmesg-ctime-multi-gpu.log", {"GpuHardwareXid"}),
    ("kernel-xid31-all-ranks-openmm.log", {"GpuMmuFaultOnAllRanks"}),
    ("kernel-xid31-repeated-pytorch.log", {"GpuRepeatedMmuFaults"}),
    ("kernel-nvlink-xid45-caused-by-145-149.log", {"GpuNvlinkFault"}),
    ("engine-crash-ansi-remnant-ima.log", {"EngineCrashed"}),
    ("engine-crash-workers-fatal-signal-tp8.log", {"EngineCrashed"}),
    ("kernel-noxid-gsp-wpr2-gpu6.log", {"GpuDriverFault"}),
    ("kernel-noxid-gsp-heartbeat-journal.log", {"GpuDriverFault"}),
    ("kernel-noxid-rminitadapter-syslog.log", {"GpuDriverFault"}),
    # GSP core-dump lines only (the Xid 119 of the episode is not in the paste): one alert
    ("kernel-ts-talos-gsp-coredump.log", {"GpuDriverFault"}),
    ("kernel-aer-fatal-cmplto-dmesg-human.log", {"GpuPcieUncorrectableError"}),
    ("kernel-oom-python3-syslog.log", {"HostOomKill"}),
]


def replay(capsys: pytest.CaptureFixture[str], name: str) -> list[dict[str, object]]:
    flag = "--kernel" if name.startswith("kernel") else "--engine-log"
    args = ["replay", flag, str(SIGNAL / name), "--format", "jsonl", "--year", "2026"]
    assert main(args) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]


@pytest.mark.parametrize(("name", "alerts"), EXPECTED)
def test_replay_pages_exactly_what_an_operator_would(
    capsys: pytest.CaptureFixture[str], name: str, alerts: set[str]
) -> None:
    lines = replay(capsys, name)
    fired = {str(d["alertname"]) for d in lines if d["kind"] == "alert" and d["state"] == "firing"}
    assert fired == alerts


def test_every_fixture_is_in_the_table() -> None:
    named = {p.values[0] if hasattr(p, "values") else p[0] for p in EXPECTED}
    assert named == {p.name for p in SIGNAL.glob("*.log")}


def test_cuda_oom_crash_names_its_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    """The OOM line says `GPU 3 has a total capacity of …`: the crash event carries gpu 3."""
    lines = replay(capsys, "engine-crash-cuda-oom-gpu3.log")
    (crash,) = [d for d in lines if d.get("type") == "engine_crash"]
    assert crash["signature"] == "cuda_oom" and crash["gpu"] == 3


def test_worker_crashes_page_once_with_a_clean_signature(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """All eight TP workers fail at start-up: one crash event, one alert."""
    lines = replay(capsys, "engine-crash-workers-fatal-signal-tp8.log")
    (crash,) = [d for d in lines if d.get("type") == "engine_crash"]
    assert crash["signature"] == "worker_died"
    assert len([d for d in lines if d["kind"] == "alert"]) == 1
