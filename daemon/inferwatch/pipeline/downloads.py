"""Wires one download: its probe's observations through the verdict machine into the store and
the event log. The polled source the scheduler sees is :class:`DownloadPolling` (``download:NAME``);
its checkpoint is the machine's state, saved with the snapshot."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from inferwatch.clock import Clock
from inferwatch.config.downloads import DownloadConfig
from inferwatch.derive.download_verdict import HELP, VERDICTS_TOTAL, DownloadMachine
from inferwatch.event import Kind
from inferwatch.labels import Labels, make_labels
from inferwatch.model import Record
from inferwatch.pipeline.sink import EventSink, apply_effects
from inferwatch.sources.download_probe import DownloadProbe
from inferwatch.store.tsdb import SeriesStore

BRIDGE_COVER_S = 900.0  # longer than any first-occurrence clause's offset plus its lookback
BRIDGE_STEP_S = 30.0


def bridge_downtime(store: SeriesStore, name: str, labels: Labels, now: float) -> None:
    """A verdict counter restored from the snapshot held its value while the daemon was down:
    write that (as the carried counter would have been) over the last quarter of an hour, so a
    first-occurrence clause (``x unless x offset 5m``) does not take an old verdict for news."""
    s = store.get(name, labels)
    last = s.last_real() if s is not None else None
    if last is None or now - last[0] <= BRIDGE_STEP_S:
        return
    t = max(last[0] + BRIDGE_STEP_S, now - BRIDGE_COVER_S)
    while t < now:
        store.set_counter(name, labels, last[1], t)
        t += BRIDGE_STEP_S


VERDICT_EVENTS = ["download_finished", "download_failed"]


def describe_download_metrics(store: SeriesStore) -> None:
    for name, text in HELP.items():
        store.describe(name, Kind.COUNTER if name == VERDICTS_TOTAL else Kind.GAUGE, text)


class DownloadPolling:
    def __init__(
        self,
        cfg: DownloadConfig,
        store: SeriesStore,
        sink: EventSink,
        clock: Clock,
        checkpoint: Any = None,
        past: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.name = f"download:{cfg.name}"
        self.interval = cfg.interval
        self.cfg = cfg
        self.probe = DownloadProbe(cfg, clock)
        self.machine = DownloadMachine(cfg, self.name, checkpoint)
        self.store = store
        self.sink = sink
        for event in past:  # newest first
            held = self.machine.adopt(event)
            if held:
                verdict = self.machine.state.phase
                labels = make_labels({"download": cfg.name, "verdict": verdict})
                series = store.get(VERDICTS_TOTAL, labels)
                last = series.last_real() if series is not None else None
                if held > (last[1] if last else 0.0):
                    store.inc_baseline(VERDICTS_TOTAL, labels, held - (last[1] if last else 0.0))
                break
        for verdict in self.machine.state.counts:
            labels = make_labels({"download": cfg.name, "verdict": verdict})
            bridge_downtime(store, VERDICTS_TOTAL, labels, clock.time())

    def checkpoint(self) -> dict[str, Any]:
        return self.machine.checkpoint()

    async def poll(self) -> Record | None:
        obs = await self.probe.observe()
        await apply_effects(self.machine.step(obs), self.store, self.sink)
        return None

    def status(self) -> dict[str, Any]:
        """The download as ``/api/v1/status`` shows it (``downloads`` list)."""
        s, obs = self.machine.state, self.machine.last
        out: dict[str, Any] = {
            "name": self.cfg.name,
            "directory": str(self.cfg.directory),
            "downloader": "{}={}".format(*self.cfg.downloader()),
            "state": s.phase,
            "bytes": None,
            "expected_bytes": None,
            "partial_files": None,
            "rate_bytes_per_second": {"1m": None, "10m": None},
            "alive": None,
            "verdict_at": s.verdict_at,
            "reason": s.reason,
            "error": s.error,
            "owner": s.owner,
            "verdicts": dict(s.counts),
        }
        if obs is not None:
            out["alive"] = obs.downloader.alive
            if obs.scan.exists:
                out["bytes"] = obs.scan.total_bytes
                out["partial_files"] = len(obs.scan.partials)
            out["expected_bytes"] = self.machine.expected(obs)
            out["rate_bytes_per_second"] = {
                "1m": self.machine.rate(60.0, obs.at),
                "10m": self.machine.rate(600.0, obs.at),
            }
        return out
