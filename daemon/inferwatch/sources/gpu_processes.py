"""VRAM by process: NVML's per-process memory joined with what /proc says about each process.

The NVML sampler lists, every poll, which PIDs hold memory on which GPU (:class:`GpuProcessUse`)
and calls :meth:`ProcessTable.samples` from its own worker thread. The table looks each PID up
with psutil (name, command line, status, parent, start time) and reads the systemd unit from
``/proc/PID/cgroup`` (:func:`~inferwatch.sources.cgroup_unit.unit_from_cgroup`), then labels
each (GPU, PID) with a state:

- ``running``: alive, and its parent is the one it had when first seen;
- ``zombie``: exited but not reaped (defunct); the driver may still hold its memory;
- ``gone``: seen here by an earlier poll, no longer in /proc, still listed by NVML;
- ``parent_gone``: alive, but the parent it had when first seen has exited (it was reparented
  to init or a subreaper): an engine's worker left behind when the engine died;
- ``unknown``: never seen in /proc here (another PID namespace, e.g. a container): not orphaned.

``zombie``, ``gone`` and ``parent_gone`` are orphaned: their bytes add up per GPU in
``inferwatch_gpu_orphaned_memory_bytes``, exported for every GPU (0 when none). A process is
identified by psutil's (PID, start time), so a reused PID starts afresh; what never changes for
one process (start time, unit, parent when first seen) is read once, which also keeps a v1
zombie's unit (its cgroup then reads as the root). A process first seen after its parent died
reads as ``running``: the parent it had is no longer knowable. PIDs NVML has not listed
for :data:`FORGET_AFTER_POLLS` polls are forgotten. Nothing here raises for a process that
vanished between two reads: it is classified with what is known.

Where NVML lists one PID as both a compute and a graphics process on the same GPU, each entry
reports the process's memory on that GPU, so the larger is taken (a sum would count it twice).
A use NVML reports without a figure (``used_bytes`` None) is still classified (see
:attr:`ProcessTable.processes`) but exports no memory series and adds nothing to the orphan sum.
At most :data:`MAX_SERIES_PER_GPU` process series per GPU are exported, orphaned ones first,
then by bytes; how many were left out is ``inferwatch_gpu_process_series_dropped``.

psutil reads one global ``psutil.PROCFS_PATH``: a table built with another ``proc_root`` sets
it (psutil documents this knob for a /proc mounted elsewhere, e.g. the host's inside a
container), so a daemon watches one proc root.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import psutil

from inferwatch.labels import Labels, make_labels
from inferwatch.model import Sample
from inferwatch.sources.cgroup_unit import unit_from_cgroup

MEMORY_METRIC = "inferwatch_gpu_process_memory_bytes"
ORPHANED_METRIC = "inferwatch_gpu_orphaned_memory_bytes"
DROPPED_METRIC = "inferwatch_gpu_process_series_dropped"
GPU_PROCESS_HELP: dict[str, str] = {
    MEMORY_METRIC: "GPU memory a process holds on a GPU, labelled with its PID, name, systemd "
    "unit and state (running, zombie, gone, parent_gone, unknown).",
    ORPHANED_METRIC: "GPU memory held by zombie, gone or parent_gone processes on a GPU.",
    DROPPED_METRIC: "Processes on a GPU left out of the per-process memory series (cap per GPU).",
}
MAX_SERIES_PER_GPU = 64
FORGET_AFTER_POLLS = 30  # one minute at the default 2-s interval


class ProcessState(StrEnum):
    RUNNING = "running"
    ZOMBIE = "zombie"
    GONE = "gone"
    PARENT_GONE = "parent_gone"
    UNKNOWN = "unknown"


ORPHANED = frozenset({ProcessState.ZOMBIE, ProcessState.GONE, ProcessState.PARENT_GONE})
GpuKey = tuple[str, str, str]  # (gpu index, uuid, pci_bus_id)


@dataclass(frozen=True, slots=True)
class GpuProcessUse:
    """One entry of NVML's compute or graphics process list of one GPU."""

    gpu: str  # NVML index as a string
    uuid: str
    pci_bus_id: str  # normalised 0000:03:00.0
    pid: int
    used_bytes: float | None  # None when NVML reports NVML_VALUE_NOT_AVAILABLE
    kind: str  # "compute" | "graphics"


@dataclass(frozen=True, slots=True)
class GpuProcess:
    """One process on one GPU as the last poll classified it."""

    gpu: str
    uuid: str
    pci_bus_id: str
    pid: int
    used_bytes: float | None
    kinds: tuple[str, ...]
    state: ProcessState
    name: str = ""
    unit: str = ""
    cmdline: tuple[str, ...] = ()
    parent_pid: int | None = None  # the parent when first seen
    started_at: float | None = None  # seconds since the epoch


@dataclass(slots=True)
class _Known:
    proc: psutil.Process  # compares equal only to the same process (PID and start time)
    parent_pid: int
    started_at: float
    unit: str
    name: str
    cmdline: tuple[str, ...]
    last_listed: int


class ProcessTable:
    """Classifies the PIDs NVML lists; synchronous, called from the NVML worker thread."""

    def __init__(self, proc_root: Path = Path("/proc")) -> None:
        self._proc_root = proc_root
        if str(proc_root) != psutil.PROCFS_PATH:
            psutil.PROCFS_PATH = str(proc_root)
        self._known: dict[int, _Known] = {}
        self._poll = 0
        self.processes: tuple[GpuProcess, ...] = ()  # the last poll's, for a status view

    def samples(
        self, gpus: Sequence[tuple[str, str, str]], uses: Sequence[GpuProcessUse]
    ) -> tuple[Sample, ...]:
        self._poll += 1
        merged = _merge(uses)
        seen = {pid: self._classify(pid) for pid in sorted({pid for _, pid in merged})}
        self._forget()
        self.processes = tuple(
            _process(key, pid, used, kinds, *seen[pid])
            for (key, pid), (used, kinds) in merged.items()
        )
        keys = dict.fromkeys([*((g[0], g[1], g[2]) for g in gpus), *(k for k, _ in merged)])
        return tuple(
            sample
            for key in keys
            for sample in _gpu_samples(key, [p for p in self.processes if _key(p) == key])
        )

    def _classify(self, pid: int) -> tuple[ProcessState, _Known | None]:
        known = self._known.get(pid)
        try:
            proc = psutil.Process(pid)
            if known is None or known.proc != proc:  # first sight, or the PID was reused
                known = self._known[pid] = self._first_sight(proc)
            return _state(proc, known), known
        except psutil.ZombieProcess:  # a zombie that refused one of the reads
            return ProcessState.ZOMBIE, known
        except (psutil.NoSuchProcess, OSError):  # OSError: its /proc files went mid-read
            return (ProcessState.UNKNOWN if known is None else ProcessState.GONE), known
        except psutil.Error:  # not allowed to look (hidepid=1): as good as not seen
            return ProcessState.UNKNOWN, known
        finally:
            if known is not None:
                known.last_listed = self._poll

    def _first_sight(self, proc: psutil.Process) -> _Known:
        try:
            text = (self._proc_root / str(proc.pid) / "cgroup").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = ""
        return _Known(proc, proc.ppid(), proc.create_time(), unit_from_cgroup(text), "", (), 0)

    def _forget(self) -> None:
        for pid in [
            p for p, k in self._known.items() if self._poll - k.last_listed >= FORGET_AFTER_POLLS
        ]:
            del self._known[pid]


def _state(proc: psutil.Process, known: _Known) -> ProcessState:
    with proc.oneshot():
        status, ppid, known.name = proc.status(), proc.ppid(), proc.name()
        with contextlib.suppress(psutil.ZombieProcess):  # a zombie's reads empty: keep the last
            known.cmdline = tuple(proc.cmdline())
    if status == psutil.STATUS_ZOMBIE:
        return ProcessState.ZOMBIE
    return ProcessState.PARENT_GONE if ppid != known.parent_pid else ProcessState.RUNNING


Merged = dict[tuple[GpuKey, int], tuple[float | None, tuple[str, ...]]]


def _merge(uses: Sequence[GpuProcessUse]) -> Merged:
    """One entry per (GPU, PID): the larger figure of its compute and graphics entries."""
    out: Merged = {}
    for u in uses:
        k = ((u.gpu, u.uuid, u.pci_bus_id), u.pid)
        used, kinds = out.get(k, (None, ()))
        if u.used_bytes is not None:
            used = u.used_bytes if used is None else max(used, u.used_bytes)
        out[k] = (used, kinds if u.kind in kinds else (*kinds, u.kind))
    return out


def _process(
    key: GpuKey,
    pid: int,
    used: float | None,
    kinds: tuple[str, ...],
    state: ProcessState,
    k: _Known | None,
) -> GpuProcess:
    if k is None:
        return GpuProcess(*key, pid, used, kinds, state)
    return GpuProcess(
        *key, pid, used, kinds, state, k.name, k.unit, k.cmdline, k.parent_pid, k.started_at
    )


def _key(p: GpuProcess) -> GpuKey:
    return (p.gpu, p.uuid, p.pci_bus_id)


def _gpu_samples(key: GpuKey, procs: list[GpuProcess]) -> list[Sample]:
    ident = {"gpu": key[0], "uuid": key[1], "pci_bus_id": key[2]}
    measured = [p for p in procs if p.used_bytes is not None]
    measured.sort(key=lambda p: (p.state not in ORPHANED, -(p.used_bytes or 0.0), p.pid))
    out = [
        Sample(MEMORY_METRIC, _labels(ident, p), p.used_bytes or 0.0)
        for p in measured[:MAX_SERIES_PER_GPU]
    ]
    orphaned = sum(p.used_bytes or 0.0 for p in measured if p.state in ORPHANED)
    labels = make_labels(ident)
    out.append(Sample(ORPHANED_METRIC, labels, float(orphaned)))
    out.append(Sample(DROPPED_METRIC, labels, float(max(0, len(measured) - MAX_SERIES_PER_GPU))))
    return out


def _labels(ident: dict[str, str], p: GpuProcess) -> Labels:
    extra = {"pid": str(p.pid), "name": p.name, "state": p.state.value, "unit": p.unit}
    return make_labels({**ident, **extra})
