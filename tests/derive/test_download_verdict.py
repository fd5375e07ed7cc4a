"""The download verdict machine on a fake clock: gone three probes then judged, once; stalls."""

from __future__ import annotations

from typing import Any

from inferwatch.clock import FakeClock
from inferwatch.config.downloads import DownloadConfig
from inferwatch.derive.download_verdict import (
    BYTES,
    ETA,
    FAILURE_INFO,
    RATE,
    STATE,
    VERDICTS_TOTAL,
    DownloadMachine,
)
from inferwatch.derive.effects import CounterInc, Effect, GaugeSet, SeriesEnd
from inferwatch.event import Event
from inferwatch.sources.download_probe import (
    DirectoryScan,
    DownloaderState,
    DownloadObservation,
    PartialFile,
)


def cfg(**kw: Any) -> DownloadConfig:
    return DownloadConfig.model_validate({"name": "m", "directory": "/d", "pid": 7, **kw})


class Run:
    def __init__(self, machine: DownloadMachine) -> None:
        self.m = machine
        self.clock = FakeClock()
        self.effects: list[Effect] = []

    def probe(
        self,
        size: int,
        alive: bool = True,
        partials: int = 0,
        identity: str = "1.00",
        exit_status: int | None = None,
        log: str | None = None,
        step: float = 2.0,
    ) -> list[Effect]:
        self.clock.advance(step)
        parts = tuple(PartialFile(f"f{i}.incomplete", 1, "root") for i in range(partials))
        scan = DirectoryScan(True, size, ("a.safetensors",), parts)
        d = DownloaderState(alive, identity if alive else "", exit_status)
        out = self.m.step(DownloadObservation(self.clock.time(), scan, d, log_tail=log))
        self.effects += out
        return out

    def events(self) -> list[Event]:
        return [e for e in self.effects if isinstance(e, Event)]

    def counts(self) -> list[tuple[str, bool]]:
        return [
            (dict(e.labels)["verdict"], e.alertable)
            for e in self.effects
            if isinstance(e, CounterInc) and e.name == VERDICTS_TOTAL
        ]

    def gauge(self, name: str, **labels: str) -> float | None:
        found = None
        for e in self.effects:
            if (
                isinstance(e, GaugeSet)
                and e.name == name
                and labels.items() <= dict(e.labels).items()
            ):
                found = e.value
            if isinstance(e, SeriesEnd) and e.name == name:
                found = None
        return found


def test_gone_for_three_probes_then_finished_once() -> None:
    run = Run(DownloadMachine(cfg(expected_bytes=6_000_000), "download:m"))
    for i in range(1, 7):
        run.probe(i * 1_000_000, partials=1)
    run.probe(6_000_000)  # renamed: no partial left
    run.probe(6_000_000, alive=False)
    run.probe(6_000_000, alive=False)
    assert run.events() == []  # two failed probes are not an ending (systemd flickers)
    run.probe(6_000_000, alive=False)
    (event,) = run.events()
    assert event.type == "download_finished" and event.details["name"] == "m"
    assert run.counts() == [("finished", True)]
    assert run.gauge(STATE, state="finished") == 1.0
    for _ in range(50):
        run.probe(6_000_000, alive=False)
    assert len(run.events()) == 1


def test_one_alive_probe_between_gone_probes_starts_the_count_again() -> None:
    run = Run(DownloadMachine(cfg(), "download:m"))
    run.probe(10)
    for alive in (False, False, True, False, False):
        run.probe(10, alive=alive)
    assert run.events() == []


def test_partials_left_is_failed_with_the_log_error_and_owner() -> None:
    run = Run(DownloadMachine(cfg(), "download:m"))
    run.probe(100, partials=1)
    log = "fetching shard 3\nPermissionError: [Errno 13] Permission denied: 'x.incomplete'\n"
    for _ in range(3):
        run.probe(200, alive=False, partials=1, log=log)
    (event,) = run.events()
    assert event.type == "download_failed"
    assert "PermissionError" in event.details["error"]
    assert event.details["owner"] == "root"
    assert run.counts() == [("failed", True)]
    info = [e for e in run.effects if isinstance(e, GaugeSet) and e.name == FAILURE_INFO]
    assert dict(info[-1].labels)["owner"] == "root"
    assert "Permission denied" in dict(info[-1].labels)["error"]


def test_non_zero_exit_fails_and_short_total_fails() -> None:
    run = Run(DownloadMachine(cfg(), "download:m"))
    run.probe(1)
    for _ in range(3):
        run.probe(1, alive=False, exit_status=2)
    assert "status 2" in run.events()[0].details["reason"]
    run = Run(DownloadMachine(cfg(expected_bytes=1000), "download:m"))
    run.probe(1)
    for _ in range(3):
        run.probe(999, alive=False)
    assert run.events()[0].type == "download_failed"


def test_first_sight_of_an_ended_download_is_a_baseline_not_news() -> None:
    run = Run(DownloadMachine(cfg(), "download:m"))
    for _ in range(3):
        run.probe(500, alive=False)
    assert run.counts() == [("finished", False)]
    assert run.events()[0].details["baseline"] is True


def test_the_checkpoint_keeps_the_verdict_across_a_restart() -> None:
    first = Run(DownloadMachine(cfg(), "download:m"))
    first.probe(5)
    for _ in range(3):
        first.probe(5, alive=False)
    saved = first.m.checkpoint()
    second = Run(DownloadMachine(cfg(), "download:m", saved))
    for _ in range(10):
        second.probe(5, alive=False, step=3600)
    assert second.events() == [] and second.counts() == []
    other = Run(DownloadMachine(cfg(pid=8), "download:m", saved))  # another downloader
    for _ in range(3):
        other.probe(5, alive=False)
    assert other.counts() == [("finished", False)]


def test_ended_while_down_is_announced_after_the_restart() -> None:
    first = Run(DownloadMachine(cfg(), "download:m"))
    first.probe(5)
    second = Run(DownloadMachine(cfg(), "download:m", first.m.checkpoint()))
    for _ in range(3):
        second.probe(5, alive=False)
    assert second.counts() == [("finished", True)]


def test_pauses_shorter_than_stall_after_are_not_a_stall() -> None:
    run = Run(DownloadMachine(cfg(stall_after="10m"), "download:m"))
    size = 0
    for _ in range(6):
        for _ in range(290):  # 9 min 40 s without growth
            run.probe(size)
        size += 1000
        run.probe(size)
    assert run.events() == []
    assert run.gauge(STATE, state="downloading") == 1.0


def test_no_growth_for_stall_after_is_one_stall_until_it_moves() -> None:
    run = Run(DownloadMachine(cfg(stall_after="10m"), "download:m"))
    run.probe(10)
    for _ in range(299):
        run.probe(10)
    assert run.events() == []
    run.probe(10)
    for _ in range(100):
        run.probe(10)
    assert [e.type for e in run.events()] == ["download_stalled"]
    assert run.gauge(STATE, state="stalled") == 1.0
    run.probe(20)
    assert run.gauge(STATE, state="downloading") == 1.0
    assert run.counts() == [("stalled", True)]


def test_rates_and_eta() -> None:
    run = Run(DownloadMachine(cfg(expected_bytes=10_000_000), "download:m"))
    for i in range(31):
        run.probe(i * 2000, step=2.0)  # 1000 B/s
    assert run.gauge(RATE, window="1m") == 1000.0
    assert run.gauge(RATE, window="10m") == 1000.0
    assert run.gauge(BYTES) == 60_000.0
    eta = run.gauge(ETA)
    assert eta is not None and abs(eta - 9_940.0) < 1


def test_a_reused_pid_is_not_the_downloader() -> None:
    run = Run(DownloadMachine(cfg(), "download:m"))
    run.probe(5, identity="1.00")
    for _ in range(3):
        run.probe(5, identity="99.00")  # another process got the number
    assert run.counts() == [("finished", True)]


def test_a_unit_that_runs_again_is_a_new_run() -> None:
    run = Run(DownloadMachine(cfg(pid=None, user_unit="dl"), "download:m"))
    run.probe(5)
    for _ in range(3):
        run.probe(5, alive=False)
    for i in range(4):
        run.probe(6 + i)
    for _ in range(3):
        run.probe(100, alive=False)
    assert run.counts() == [("finished", True), ("finished", True)]
    assert len({e.key for e in run.events()}) == 2


def test_a_verdict_in_the_event_log_but_not_in_the_checkpoint_is_adopted() -> None:
    first = Run(DownloadMachine(cfg(), "download:m"))
    first.probe(5)
    saved = first.m.checkpoint()  # the last snapshot, then the verdict, then a kill -9
    for _ in range(3):
        first.probe(5, alive=False)
    (event,) = first.events()
    row = {"type": event.type, "at": event.at, "source": event.source, "key": event.key,
           "details": dict(event.details)}  # fmt: skip
    second = Run(DownloadMachine(cfg(), "download:m", saved))
    assert second.m.adopt({**row, "source": "download:other"}) == 0
    assert second.m.adopt(row) == 1
    assert second.m.adopt(row) == 0  # already judged
    for _ in range(5):
        second.probe(5, alive=False)
    assert second.events() == [] and second.gauge(STATE, state="finished") == 1.0


def test_a_download_not_started_yet_waits() -> None:
    run = Run(DownloadMachine(cfg(pid=None, user_unit="dl"), "download:m"))
    for _ in range(10):
        run.probe(0, alive=False)
    assert run.events() == [] and run.gauge(STATE, state="waiting") == 1.0
    run.probe(0)
    run.probe(100)
    for _ in range(3):
        run.probe(100, alive=False)
    assert run.counts() == [("finished", True)]
