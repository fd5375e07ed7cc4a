"""A service's debounced state from its raw probe results: clock-free, I/O-free.

- UP after ``up_after`` good probes in a row, DOWN after ``down_after`` bad ones.
- STARTING instead of DOWN while the service's current process is younger than
  ``startup_grace`` and has not been ready since it started (loading takes minutes). After the
  grace, a start-up watched within its grace whose process lives and never became ready stays
  STARTING, *overdue* (stuck); a process that is gone, or one first met already past its grace
  and not ready, is DOWN. Without process facts the grace runs from the first probe, until the
  first UP.
- FLAPPING when the raw result changed more than ``flap_changes`` times within
  ``flap_window``; it ends when the changes fall back to the limit and a streak decides.
  Alternating results never complete a streak, so they never move the state otherwise.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from enum import StrEnum


class ServiceState(StrEnum):
    UNKNOWN = "unknown"  # not enough probes yet: exported as no state at all
    STARTING = "starting"
    UP = "up"
    DOWN = "down"
    FLAPPING = "flapping"


STATES = (ServiceState.STARTING, ServiceState.UP, ServiceState.DOWN, ServiceState.FLAPPING)


@dataclass(frozen=True, slots=True)
class DebounceSettings:
    up_after: int = 2
    down_after: int = 3
    startup_grace: float = 600.0
    flap_changes: int = 6
    flap_window: float = 600.0


@dataclass(frozen=True, slots=True)
class Observation:
    """One probe: all checks good or not, the first failed check and why, and the main
    process (alive: None when unknown here; started_at: when it started, None unknown)."""

    at: float
    ok: bool
    check: str = ""
    reason: str = ""
    alive: bool | None = None
    started_at: float | None = None


@dataclass(frozen=True, slots=True)
class Transition:
    at: float
    old: ServiceState
    new: ServiceState
    check: str
    reason: str


class Debouncer:
    def __init__(self, settings: DebounceSettings) -> None:
        self.settings = settings
        self.state = ServiceState.UNKNOWN
        self.since: float | None = None
        self.check = ""
        self.reason = ""
        self._good = 0
        self._bad = 0
        self._last_ok: bool | None = None
        self._changes: deque[float] = deque()
        self._first_at: float | None = None
        self._process_start: float | None = None
        self._ready_since_start = False
        self._starting_since: float | None = None
        self._watched_start: float | None = None  # the process start-up seen within its grace

    def observe(self, obs: Observation) -> Transition | None:
        s = self.settings
        if self._first_at is None:
            self._first_at = obs.at
        if obs.started_at is not None and obs.started_at != self._process_start:
            self._process_start = obs.started_at  # a new process: a new start-up
            self._ready_since_start = False
        if self._last_ok is not None and obs.ok != self._last_ok:
            self._changes.append(obs.at)
        while self._changes and self._changes[0] <= obs.at - s.flap_window:
            self._changes.popleft()
        self._last_ok = obs.ok
        self._good, self._bad = (self._good + 1, 0) if obs.ok else (0, self._bad + 1)
        if not obs.ok:
            self.check, self.reason = obs.check, obs.reason
        new = self._decide(obs)
        if new is ServiceState.UP and obs.ok:
            self._ready_since_start = True  # this process has answered
        if new is ServiceState.STARTING and self.state is not ServiceState.STARTING:
            self._starting_since = obs.at
        if new is self.state:
            return None
        old, self.state, self.since = self.state, new, obs.at
        check, reason = ("", "") if new is ServiceState.UP else (self.check, self.reason)
        return Transition(obs.at, old, new, check, reason)

    def _decide(self, obs: Observation) -> ServiceState:
        s = self.settings
        if len(self._changes) > s.flap_changes:
            return ServiceState.FLAPPING
        if self._good >= s.up_after:
            return ServiceState.UP
        if self._bad >= s.down_after:
            return ServiceState.STARTING if self._starting(obs) else ServiceState.DOWN
        return self.state  # no streak decides: the state stays (alternation moves nothing)

    def _starting(self, obs: Observation) -> bool:
        if obs.alive is False or self._ready_since_start:
            return False
        start = self._process_start if self._process_start is not None else self._first_at
        if start is not None and obs.at - start < self.settings.startup_grace:
            self._watched_start = self._process_start
            return True
        # past the grace: a start-up watched from within its grace that never finished is
        # stuck (still STARTING, overdue); an old process found not ready is down
        return bool(obs.alive) and start == self._watched_start is not None

    def overdue(self, now: float) -> bool:
        """STARTING for longer than the grace: the start-up is stuck."""
        if self.state is not ServiceState.STARTING:
            return False
        start = self._process_start if self._process_start is not None else self._starting_since
        return start is not None and now - start >= self.settings.startup_grace
