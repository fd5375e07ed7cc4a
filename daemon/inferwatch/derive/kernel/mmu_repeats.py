"""Repeated Xid 31 on the same GPU: the hardware suspicion of NVIDIA's Xid 31 workflow.

reference/xid.md 9.3 and 9.5: one MMU fault is usually the application; the same fault on several
GPUs at once is a software bug (see ``correlate``); but separate MMU faults on the *same* GPU
over days (different processes, different addresses) point to that GPU's hardware.

The unit is a *burst*: Xid 31 lines on one GPU within ``window`` of the burst's first line (a
fault prints once per affected channel). A burst is decided only once it has settled, i.e. when
the newest record time is more than ``window + max_skew`` past its start, because until then a
late fault on another GPU could still turn it into a multi-GPU software incident, which is not
hardware evidence. A settled, isolated burst on a GPU that already had an isolated burst within
``horizon`` is a repeat, unless it is the very same fault again (same process and address) or a
process that already faulted on this GPU faulting again (that points to the application: only
*different* processes hitting the same GPU point to the card).

The choice exported is a counter of repeats (``inferwatch_gpu_repeated_mmu_faults_total``): its
first increment is the second separate burst, so a rule can page on ``increase(...) > 0``.
History lives in memory (a restart forgets earlier bursts); it is bounded per GPU and in GPUs.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

DEFAULT_HORIZON = 7 * 86400.0
MAX_HISTORY = 32
MAX_GPUS = 256


@dataclass(slots=True)
class _Burst:
    pci_bus_id: str
    first_at: float
    pid: int | None
    address: int | None
    alertable: bool
    all_ranks: bool = False


@dataclass(frozen=True, slots=True)
class RepeatedFault:
    """A settled, isolated Xid 31 burst on a GPU that had one before within the horizon."""

    pci_bus_id: str
    at: float
    previous_at: float
    repeat_count: int  # isolated bursts on this GPU within the horizon, this one included
    alertable: bool


class MmuRepeatTracker:
    __slots__ = ("_history", "_open", "horizon", "max_skew", "window")

    def __init__(
        self, window: float = 2.0, max_skew: float = 2.0, horizon: float = DEFAULT_HORIZON
    ) -> None:
        self.window = window
        self.max_skew = max_skew
        self.horizon = horizon
        self._open: list[_Burst] = []
        self._history: dict[str, deque[tuple[float, int | None, int | None]]] = {}

    @property
    def state_size(self) -> int:
        return len(self._open) + sum(map(len, self._history.values()))

    def observe(
        self, pci_bus_id: str, at: float, pid: int | None, address: int | None, alertable: bool
    ) -> None:
        """Count one Xid 31 line; ``address`` is None when the line has no MMU detail."""
        burst = self._find(pci_bus_id, at)
        if burst is None:
            self._open.append(_Burst(pci_bus_id, at, pid, address, alertable))
        else:
            burst.alertable = burst.alertable or alertable

    def mark_all_ranks(self, pci_bus_id: str, at: float) -> None:
        """The fault at ``at`` on this GPU is part of a multi-GPU software incident."""
        burst = self._find(pci_bus_id, at)
        if burst is not None:
            burst.all_ranks = True

    def close(self, newest: float) -> list[RepeatedFault]:
        """Decide the bursts that can no longer change, given the newest record time seen."""
        settled = [b for b in self._open if b.first_at + self.window + self.max_skew < newest]
        if not settled:
            return []
        self._open = [b for b in self._open if b.first_at + self.window + self.max_skew >= newest]
        return self._decide(settled)

    def close_all(self) -> list[RepeatedFault]:
        """End of input (replay): decide every open burst."""
        settled, self._open = self._open, []
        return self._decide(settled)

    def _find(self, pci_bus_id: str, at: float) -> _Burst | None:
        for burst in self._open:
            if burst.pci_bus_id == pci_bus_id and abs(at - burst.first_at) <= self.window:
                return burst
        return None

    def _decide(self, settled: list[_Burst]) -> list[RepeatedFault]:
        repeats: list[RepeatedFault] = []
        for burst in sorted(settled, key=lambda b: b.first_at):
            if burst.all_ranks:
                continue
            history = self._history.setdefault(burst.pci_bus_id, deque(maxlen=MAX_HISTORY))
            while history and history[0][0] < burst.first_at - self.horizon:
                history.popleft()
            identity = (burst.pid, burst.address)
            if history and history[-1][1:] == identity and burst.address is not None:
                continue  # the same fault printed again, not a separate one
            if burst.pid is not None and any(pid == burst.pid for _, pid, _ in history):
                continue  # a process faulting again is that application's, not the GPU's
            if history:
                repeats.append(
                    RepeatedFault(
                        burst.pci_bus_id,
                        burst.first_at,
                        history[-1][0],
                        len(history) + 1,
                        burst.alertable,
                    )
                )
            history.append((burst.first_at, *identity))
        self._bound_gpus()
        return repeats

    def _bound_gpus(self) -> None:
        while len(self._history) > MAX_GPUS:
            oldest = min(self._history, key=self._last_seen)
            del self._history[oldest]

    def _last_seen(self, pci_bus_id: str) -> float:
        history = self._history[pci_bus_id]
        return history[-1][0] if history else float("-inf")
