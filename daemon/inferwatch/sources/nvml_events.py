"""Xid events from NVML: the driver's own report of a GPU fault, beside the kernel log's line.

A thread of its own registers every GPU for ``nvmlEventTypeXidCriticalError`` and waits in
``nvmlEventSetWait_v2`` (one second at a time, so a stop is noticed); each event is handed to
the loop with ``call_soon_threadsafe`` (as ``runtime/watch.py`` hands file events) and emitted
as an :class:`~inferwatch.model.NvmlXidRecord`. The kernel pipeline counts it once with the log
line of the same fault (``derive/kernel/echoes``). Replay never reads NVML.

No NVML here (no library, no driver, no GPU) is ``NoData``; a GPU that cannot report events
(NOT_SUPPORTED) is left out and named in :attr:`NvmlXidEvents.unsupported`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from inferwatch.clock import Clock
from inferwatch.errors import NoData
from inferwatch.logsetup import get_logger
from inferwatch.model import NvmlXidRecord
from inferwatch.sources.base import Emit
from inferwatch.sources.gpu_readings import normalise_bus_id
from inferwatch.sources.nvml_sampler import text

log = get_logger(__name__)
WAIT_MS = 1000


@dataclass(frozen=True, slots=True)
class _Gpu:
    index: int
    uuid: str
    pci_bus_id: str


class NvmlXidEvents:
    """A long-running source: Xid events of every GPU NVML lists."""

    def __init__(self, module: Callable[[], Any], clock: Clock, name: str = "nvml-xid") -> None:
        self.name = name
        self._module = module
        self._clock = clock
        self.unsupported: list[str] = []
        self.registered: list[str] = []

    async def run(self, emit: Emit) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[NvmlXidRecord | BaseException] = asyncio.Queue()
        ready: asyncio.Future[None] = loop.create_future()
        stop = threading.Event()

        def hand(item: NvmlXidRecord | BaseException) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def started(error: BaseException | None) -> None:
            def settle() -> None:
                if ready.done():
                    return
                if error is None:
                    ready.set_result(None)
                else:
                    ready.set_exception(error)

            loop.call_soon_threadsafe(settle)

        thread = threading.Thread(
            target=self._wait_loop, args=(hand, started, stop), name="inferwatch-nvml-xid",
            daemon=True,
        )  # fmt: skip
        thread.start()
        try:
            await ready  # NoData (no NVML) or a registration failure surfaces here
            seq = 0
            while True:
                item = await queue.get()
                if isinstance(item, BaseException):
                    raise item
                seq += 1
                await emit(item.numbered(seq))
        finally:
            stop.set()

    def _wait_loop(
        self,
        hand: Callable[[NvmlXidRecord | BaseException], None],
        started: Callable[[BaseException | None], None],
        stop: threading.Event,
    ) -> None:
        try:
            nv, events, gpus = self._register()
        except BaseException as exc:  # handed to the loop: NoData or a real failure
            started(exc)
            return
        started(None)
        try:
            while not stop.is_set():
                try:
                    data = nv.nvmlEventSetWait_v2(events, WAIT_MS)
                except nv.NVMLError as exc:
                    if getattr(exc, "value", None) == nv.NVML_ERROR_TIMEOUT:
                        continue
                    hand(exc)
                    return
                record = self._record(nv, data, gpus)
                if record is not None:
                    hand(record)
        finally:
            with contextlib.suppress(nv.NVMLError):
                nv.nvmlEventSetFree(events)

    def _register(self) -> tuple[Any, Any, dict[int, _Gpu]]:
        nv = self._module()
        try:
            nv.nvmlInit()
            count = int(nv.nvmlDeviceGetCount())
        except nv.NVMLError as exc:
            raise NoData(f"no NVIDIA driver/NVML here ({exc})") from None
        if count == 0:
            raise NoData("no GPUs found")
        events = nv.nvmlEventSetCreate()
        gpus: dict[int, _Gpu] = {}
        self.unsupported, self.registered = [], []
        for index in range(count):
            handle = nv.nvmlDeviceGetHandleByIndex(index)
            uuid = text(nv.nvmlDeviceGetUUID(handle))
            gpu = _Gpu(index, uuid, normalise_bus_id(text(nv.nvmlDeviceGetPciInfo(handle).busId)))
            try:
                nv.nvmlDeviceRegisterEvents(handle, nv.nvmlEventTypeXidCriticalError, events)
            except nv.NVMLError as exc:
                self.unsupported.append(f"{gpu.pci_bus_id}: {exc}")
                continue
            gpus[index] = gpu
            self.registered.append(gpu.pci_bus_id)
        if not gpus:
            nv.nvmlEventSetFree(events)
            raise NoData("no GPU reports Xid events through NVML: " + "; ".join(self.unsupported))
        log.info("NVML Xid events registered", gpus=self.registered, unsupported=self.unsupported)
        return nv, events, gpus

    def _record(self, nv: Any, data: Any, gpus: dict[int, _Gpu]) -> NvmlXidRecord | None:
        if not int(data.eventType) & nv.nvmlEventTypeXidCriticalError:
            return None
        gpu = self._gpu_of(nv, data.device, gpus)
        if gpu is None:
            return None
        xid = int(data.eventData)
        now = self._clock.time()
        return NvmlXidRecord(
            source=self.name,
            path="nvml",
            line_no=0,
            text=f"NVML event: Xid {xid} on {gpu.pci_bus_id}",
            read_at=now,
            xid=xid,
            pci_bus_id=gpu.pci_bus_id,
            gpu=str(gpu.index),
            uuid=gpu.uuid,
        )

    @staticmethod
    def _gpu_of(nv: Any, handle: Any, gpus: dict[int, _Gpu]) -> _Gpu | None:
        try:
            index = int(nv.nvmlDeviceGetIndex(handle))
        except (nv.NVMLError, AttributeError, TypeError):
            index = getattr(handle, "index", -1)
        return gpus.get(index)
