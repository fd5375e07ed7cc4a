"""GPU sampling: NVML (``pynvml``) or the fake NVML of a JSON profile, in NVML's own thread.

This module only reads. A poll runs :class:`NvmlSampler` in the :class:`NvmlWorker` thread with
``gpus.call_timeout``; a poll that finds the previous one still stuck is skipped and counted
(``inferwatch_gpu_polls_skipped_total``), one that runs past the timeout is counted
(``inferwatch_gpu_nvml_call_timeouts_total``). GPUs NVML reports lost are handed to the
pipeline through :meth:`GpuSource.take_lost` (it writes the ``gpu_lost`` event).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from inferwatch.clock import Clock
from inferwatch.event import Kind
from inferwatch.labels import Labels
from inferwatch.logsetup import get_logger
from inferwatch.model import Sample, SampleBatch
from inferwatch.sources.gpu_processes import ProcessTable
from inferwatch.sources.gpu_readings import GpuIdentity, reading_samples
from inferwatch.sources.nvml_fake import FakeNvml
from inferwatch.sources.nvml_sampler import NvmlSampler, load_pynvml
from inferwatch.sources.nvml_worker import NvmlWorker, WorkerBusy

log = get_logger(__name__)
TIMEOUTS = "inferwatch_gpu_nvml_call_timeouts_total"
SKIPPED = "inferwatch_gpu_polls_skipped_total"


def nvml_module(backend: str, profile: Path | None) -> Callable[[], Any]:
    """What stands for ``pynvml`` under ``gpus.backend``: the fake of ``profile``, else pynvml
    itself (imported when first asked for)."""
    if backend == "fake":
        assert profile is not None  # validated by the config model
        fake = FakeNvml(profile)
        return lambda: fake
    return load_pynvml


def sampler_for(
    backend: str, profile: Path | None, processes: ProcessTable | None = None
) -> NvmlSampler:
    """The sampler of ``gpus.backend``: the fake reads ``profile``; auto and nvml use pynvml."""
    return NvmlSampler(nvml_module(backend, profile), processes)


class GpuSource:
    """A polled source: the scheduler calls :meth:`poll` every ``interval`` seconds."""

    def __init__(
        self,
        sampler: NvmlSampler,
        clock: Clock,
        interval: float = 2.0,
        call_timeout: float = 5.0,
        name: str = "gpus",
        worker: NvmlWorker | None = None,
    ) -> None:
        self.name = name
        self.interval = interval
        self.call_timeout = call_timeout
        self.sampler = sampler
        self._clock = clock
        self.worker = worker or NvmlWorker()
        self.timeouts = 0
        self.skipped = 0
        self.identities: list[GpuIdentity] = []
        self._lost: set[int] = set()
        self._newly_lost: list[GpuIdentity] = []
        self._seen: set[tuple[str, Labels]] = set()

    def take_lost(self) -> list[GpuIdentity]:
        """GPUs that went from answering to lost since the last call."""
        out, self._newly_lost = self._newly_lost, []
        return out

    def _self_samples(self) -> tuple[Sample, ...]:
        return (
            Sample(TIMEOUTS, (), float(self.timeouts), Kind.COUNTER),
            Sample(SKIPPED, (), float(self.skipped), Kind.COUNTER),
        )

    async def poll(self) -> SampleBatch:
        try:
            result = await self.worker.run(self.call_timeout, self.sampler.read)
        except WorkerBusy:
            self.skipped += 1
            return SampleBatch(self.name, self._clock.time(), self._self_samples())
        except TimeoutError:
            self.timeouts += 1
            log.warning("NVML call timed out; polls are skipped until it returns",
                        source=self.name, timeout_s=self.call_timeout)  # fmt: skip
            return SampleBatch(self.name, self._clock.time(), self._self_samples())
        lost = {r.identity.index for r in result.readings if not r.up}
        self._newly_lost.extend(
            r.identity for r in result.readings if not r.up and r.identity.index not in self._lost
        )
        self._lost = lost
        self.identities = [r.identity for r in result.readings if r.identity.uuid]
        samples = (
            *reading_samples(result.readings),
            *result.process_samples,
            *self._self_samples(),
        )
        current = {(s.name, s.labels) for s in samples}
        gone = tuple(sorted(self._seen - current))
        self._seen = current
        return SampleBatch(self.name, self._clock.time(), samples, stale=gone)

    def close(self) -> None:
        self.worker.stop()
