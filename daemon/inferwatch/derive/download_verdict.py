"""The verdict machine of one download: progress while it runs, one verdict when it ends.

Fed one observation per probe, it returns effects (gauges, counters, events) and nothing else;
time is the observations' own, so tests drive it on a fake clock.

- The downloader must be gone for :data:`GONE_PROBES` consecutive probes before the download is
  judged (systemd states flicker; one failed probe is not an ending): then **finished** or
  **failed** (:func:`inferwatch.derive.download_judge.judge`).
- **stalled**: no change of the directory's bytes for ``stall_after`` while the downloader lives;
  growth ends the stall.
- Each verdict is counted once in ``inferwatch_download_verdicts_total`` and is one event; the
  machine's state is the source's checkpoint, so a restart never judges the same ending again.
  A download that had already ended when it was first seen is counted as a baseline (no page).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from inferwatch.config.downloads import DownloadConfig
from inferwatch.derive.download_judge import Judgement, expectation, judge
from inferwatch.derive.effects import CounterInc, Effect, GaugeSet, SeriesEnd
from inferwatch.event import Event
from inferwatch.labels import Labels, make_labels
from inferwatch.sources.download_probe import DownloadObservation

GONE_PROBES = 3
NEW_RUN_PROBES = 3  # a unit or pattern alive again this many probes after a verdict: a new run
WINDOWS = {"1m": 60.0, "10m": 600.0}
STATES = ("waiting", "downloading", "stalled", "finished", "failed")
VERDICTS = ("finished", "failed", "stalled")

BYTES = "inferwatch_download_bytes"
EXPECTED = "inferwatch_download_expected_bytes"
RATE = "inferwatch_download_rate_bytes_per_second"
ETA = "inferwatch_download_eta_seconds"
STATE = "inferwatch_download_state"
VERDICTS_TOTAL = "inferwatch_download_verdicts_total"
FAILURE_INFO = "inferwatch_download_failure_info"
PARTIALS = "inferwatch_download_partial_files"
HELP = {
    BYTES: "Bytes in the download's directory, partial files (*.incomplete, .part, .tmp) included.",
    EXPECTED: "Bytes a complete download holds (expected_bytes, or the index file's total_size).",
    RATE: "Download speed over the window (1m, 10m).",
    ETA: "Seconds left at the 10-minute rate; absent when the size or the rate is unknown.",
    STATE: "1 for the download's state (waiting, downloading, stalled, finished, failed).",
    VERDICTS_TOTAL: "Verdicts on the download (finished, failed, stalled), each counted once.",
    FAILURE_INFO: "1 while the download's verdict is failed; labels say why (error, owner).",
    PARTIALS: "Partial files (*.incomplete, .part, .tmp) in the download's directory.",
}


@dataclass(slots=True)
class DownloadState:
    """What the checkpoint keeps (all but the rate history)."""

    target: str = ""  # the downloader as configured ("pid:123"): another one starts afresh
    phase: str = "waiting"
    run: int = 0
    seen_alive: bool = False
    identity: str = ""
    gone: int = 0
    alive_again: int = 0
    last_bytes: int | None = None
    last_change: float | None = None
    verdict_at: float | None = None
    reason: str = ""
    error: str = ""
    owner: str = ""
    counts: dict[str, int] = field(default_factory=dict)


class DownloadMachine:
    def __init__(
        self, cfg: DownloadConfig, source: str, checkpoint: dict[str, Any] | None = None
    ) -> None:
        self.cfg = cfg
        self.source = source
        kind, value = cfg.downloader()
        self.state = _restore(checkpoint, f"{kind}:{value}")
        self.history: deque[tuple[float, int]] = deque()
        self.labels = make_labels({"download": cfg.name})
        self.last: DownloadObservation | None = None
        self._info: Labels | None = None

    def checkpoint(self) -> dict[str, Any]:
        return asdict(self.state)

    def adopt(self, event: Mapping[str, Any]) -> int:
        """Take a verdict the event log holds and the checkpoint does not (the daemon was killed
        between writing the event and its next snapshot); returns the verdicts' count to hold,
        0 when the event adds nothing."""
        s, details = self.state, event.get("details") or {}
        verdict = str(event.get("type", "")).removeprefix("download_")
        if (
            verdict not in ("finished", "failed")
            or event.get("source") != self.source
            or details.get("target") != s.target
            or details.get("run") != s.run
            or s.phase in ("finished", "failed")
        ):
            return 0
        s.phase, s.verdict_at = verdict, float(event.get("at") or 0.0)
        s.reason = str(details.get("reason", ""))
        s.error, s.owner = str(details.get("error", "")), str(details.get("owner", ""))
        count = int(str(event.get("key", "")).rsplit(":", 1)[-1] or 1)
        s.counts[verdict] = max(s.counts.get(verdict, 0), count)
        return s.counts[verdict]

    def step(self, obs: DownloadObservation) -> list[Effect]:
        self.last = obs
        s = self.state
        effects: list[Effect] = []
        grew = self._progress(obs)
        if s.phase in ("finished", "failed"):
            self._after_verdict(obs)
        elif self._alive(obs):
            s.gone = 0
            s.seen_alive = True
            s.identity = s.identity or obs.downloader.identity
            if s.phase == "waiting":
                s.phase = "downloading"
                s.last_change = obs.at
            if grew:
                s.phase = "downloading"
            elif s.phase != "stalled" and self._still_for(obs.at) >= self.cfg.stall_after:
                s.phase = "stalled"
                effects += self._verdict("stalled", obs, True, _stall(s, obs))
        else:
            s.gone += 1
            if not s.seen_alive and not (obs.scan.exists and obs.scan.total_bytes):
                pass  # not started yet: nothing written, never seen running
            elif s.gone >= GONE_PROBES:
                judgement = judge(obs, expectation(self.cfg, obs.index_text))
                news = s.seen_alive
                s.phase = judgement.verdict
                s.verdict_at = obs.at
                s.reason, s.error, s.owner = judgement.reason, judgement.error, judgement.owner
                effects += self._verdict(judgement.verdict, obs, news, judgement)
        return self._gauges(obs) + effects

    # -- parts ------------------------------------------------------------------------------
    def _alive(self, obs: DownloadObservation) -> bool:
        """Alive, and the same process as first seen: a PID the system gave to another process
        after the downloader exited is not the downloader."""
        d, s = obs.downloader, self.state
        if not d.alive:
            return False
        return self.cfg.pid is None or not (s.identity and d.identity and d.identity != s.identity)

    def _progress(self, obs: DownloadObservation) -> bool:
        s = self.state
        size = obs.scan.total_bytes if obs.scan.exists else None
        grew = size is not None and s.last_bytes is not None and size != s.last_bytes
        if size is not None:
            if grew or s.last_change is None:
                s.last_change = obs.at
            s.last_bytes = size
            self.history.append((obs.at, size))
        while self.history and self.history[0][0] < obs.at - max(WINDOWS.values()) - 60:
            self.history.popleft()
        return grew

    def _still_for(self, now: float) -> float:
        last = self.state.last_change
        return 0.0 if last is None else now - last

    def _after_verdict(self, obs: DownloadObservation) -> None:
        """A unit or a pattern can run again (the same systemd-run unit name, a new process);
        a PID alive again is another process that reused the number."""
        s = self.state
        if self.cfg.pid is not None or not obs.downloader.alive:
            s.alive_again = 0
            return
        s.alive_again += 1
        if s.alive_again >= NEW_RUN_PROBES:
            counts = s.counts
            self.state = DownloadState(target=s.target, run=s.run + 1, counts=counts)
            self.state.phase, self.state.seen_alive = "downloading", True
            self.state.last_change, self.state.last_bytes = obs.at, s.last_bytes

    def _verdict(
        self, verdict: str, obs: DownloadObservation, news: bool, j: Judgement
    ) -> list[Effect]:
        s = self.state
        s.counts[verdict] = s.counts.get(verdict, 0) + 1
        labels = make_labels({"download": self.cfg.name, "verdict": verdict})
        details: dict[str, Any] = {
            "name": self.cfg.name,
            "reason": j.reason,
            "bytes": obs.scan.total_bytes,
            "directory": str(self.cfg.directory),
            "run": s.run,
            "target": s.target,
        }
        if j.error:
            details["error"] = j.error
        if j.owner:
            details["owner"] = j.owner
        if not news:
            details["baseline"] = True  # it had ended before it was first seen
        key = f"{self.source}:{verdict}:{s.run}:{s.counts[verdict]}"
        event = Event(
            f"download_{verdict}",
            obs.at,
            self.source,
            key,
            labels=dict(self.labels),
            details=details,
        )
        return [event, CounterInc(VERDICTS_TOTAL, labels, 1.0, obs.at, alertable=news)]

    def _gauges(self, obs: DownloadObservation) -> list[Effect]:
        s, at, labels = self.state, obs.at, self.labels
        out: list[Effect] = []
        for state in STATES:
            state_labels = make_labels({"download": self.cfg.name, "state": state})
            out.append(GaugeSet(STATE, state_labels, 1.0 if s.phase == state else 0.0, at))
        info = make_labels({"download": self.cfg.name, "error": s.error, "owner": s.owner,
                            "reason": s.reason})  # fmt: skip
        if s.phase == "failed":
            out.append(GaugeSet(FAILURE_INFO, info, 1.0, at))
            self._info = info
        elif self._info is not None:
            out.append(SeriesEnd(FAILURE_INFO, self._info, at))
            self._info = None
        if not obs.scan.exists:
            return out
        out.append(GaugeSet(BYTES, labels, float(obs.scan.total_bytes), at))
        out.append(GaugeSet(PARTIALS, labels, float(len(obs.scan.partials)), at))
        expected = self.expected(obs)
        if expected is not None:
            out.append(GaugeSet(EXPECTED, labels, float(expected), at))
        rates = {w: self.rate(span, at) for w, span in WINDOWS.items()}
        for window, rate in rates.items():
            if rate is not None:
                w_labels = make_labels({"download": self.cfg.name, "window": window})
                out.append(GaugeSet(RATE, w_labels, rate, at))
        rate = rates["10m"]
        if expected is not None and rate and s.phase in ("downloading", "stalled"):
            out.append(GaugeSet(ETA, labels, max(0.0, expected - obs.scan.total_bytes) / rate, at))
        else:
            out.append(SeriesEnd(ETA, labels, at))
        return out

    def expected(self, obs: DownloadObservation) -> int | None:
        return expectation(self.cfg, obs.index_text).bytes

    def rate(self, span: float, now: float) -> float | None:
        """Bytes per second over the last ``span`` seconds (or since the first reading)."""
        if len(self.history) < 2:
            return None
        start = next((h for h in self.history if h[0] >= now - span), self.history[-1])
        t1, b1 = self.history[-1]
        if t1 <= start[0]:
            return None
        return max(0.0, (b1 - start[1]) / (t1 - start[0]))


def _stall(s: DownloadState, obs: DownloadObservation) -> Judgement:
    still = obs.at - (s.last_change or obs.at)
    return Judgement("stalled", f"no growth for {still:.0f}s ({obs.scan.total_bytes} bytes)")


def _restore(checkpoint: dict[str, Any] | None, target: str) -> DownloadState:
    if not isinstance(checkpoint, dict) or checkpoint.get("target") != target:
        return DownloadState(target=target)
    known = set(DownloadState.__dataclass_fields__)
    try:
        return DownloadState(**{k: v for k, v in checkpoint.items() if k in known})
    except TypeError:
        return DownloadState(target=target)
