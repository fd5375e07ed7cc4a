"""A pynvml-like module answering from a JSON profile (``gpus.backend: fake``).

The sampler cannot tell it from ``pynvml``: the same function names, pynvml's own constants,
struct classes and ``NVMLError`` subclasses with the real error codes. The profile (see
:mod:`inferwatch.sources.nvml_calls` for the layout) is read again whenever its file changes
(mtime or size), so a test or the demo plays scenes by rewriting it atomically. Beyond recorded
answers a profile can script:

- ``"lost": true`` in a GPU entry: every call on that GPU raises ``NVML_ERROR_GPU_IS_LOST``;
- ``"hang": {"call": NAME, "gpu": I, "seconds": S}`` at the top: that call blocks for ``S``
  seconds (``gpu`` and ``seconds`` optional; without ``seconds`` until the profile changes);
- ``"events": [{"gpu": I, "xid": N, "id": "…"}]``: Xid events delivered once each through
  ``nvmlEventSetWait_v2`` to an event set registered for that GPU, when they appear after the
  registration (as NVML reports only what happens after it). ``id`` defaults to the position.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynvml

from inferwatch.errors import NoData
from inferwatch.sources import nvml_calls as calls

NVMLError = pynvml.NVMLError


@dataclass(frozen=True, slots=True)
class FakeHandle:
    index: int


@dataclass(slots=True)
class FakeEventSet:
    devices: dict[int, int] = field(default_factory=dict)  # index -> event type mask
    seen: set[str] = field(default_factory=set)


def error(name_or_code: str | int) -> pynvml.NVMLError:
    code = name_or_code
    if isinstance(code, str):
        code = int(getattr(pynvml, f"NVML_ERROR_{code.upper()}", pynvml.NVML_ERROR_UNKNOWN))
    return pynvml.NVMLError(code)


ERROR_NAMES: dict[int, str] = {
    int(getattr(pynvml, n)): n.removeprefix("NVML_ERROR_")
    for n in dir(pynvml)
    if n.startswith("NVML_ERROR_")
}


def error_name(code: int) -> str:
    """``3`` → ``NOT_SUPPORTED``: how a profile writes an error."""
    return ERROR_NAMES.get(int(code), str(code))


def _check(answer: Any) -> Any:
    if isinstance(answer, dict) and set(answer) == {"error"}:
        raise error(answer["error"])
    return answer


class FakeNvml:
    """Stands where ``pynvml`` would: ``FakeNvml(path).nvmlDeviceGetPowerUsage(handle)``."""

    def __init__(self, profile: Path, poll_s: float = 0.02, event_poll_s: float = 0.25) -> None:
        self.path = profile
        self.poll_s = poll_s
        # How often a pending nvmlEventSetWait looks at the profile: real NVML blocks in the
        # driver at no cost, so the fake must not spend a hundredth of a core waiting either.
        self.event_poll_s = event_poll_s
        self._stamp: tuple[int, int] | None = None
        self._doc: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._initialised = False

    # -- the profile ---------------------------------------------------------------------
    def _stat(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def reload(self) -> dict[str, Any]:
        """The profile, read again when its file changed since the last look."""
        stamp = self._stat()
        with self._lock:
            if stamp is not None and stamp == self._stamp:
                return self._doc
            try:
                text = self.path.read_text(encoding="utf-8")
            except OSError:
                raise NoData(f"NVML profile {self.path} cannot be read") from None
            try:
                doc = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{self.path}:{exc.lineno}:{exc.colno}: {exc.msg}") from None
            if not isinstance(doc, dict) or not isinstance(doc.get("gpus", []), list):
                raise ValueError(f"{self.path}: not an NVML profile (want an object with 'gpus')")
            self._doc, self._stamp = doc, stamp
            return doc

    def _gpus(self) -> list[dict[str, Any]]:
        gpus: list[dict[str, Any]] = self._doc.get("gpus", [])
        return gpus

    def _gpu(self, handle: FakeHandle) -> dict[str, Any]:
        if not self._initialised:
            raise error("UNINITIALIZED")
        gpus = self._gpus()
        if not 0 <= handle.index < len(gpus):
            raise error("GPU_IS_LOST")
        gpu = gpus[handle.index]
        if gpu.get("lost"):
            raise error("GPU_IS_LOST")
        return gpu

    def _hang(self, name: str, index: int | None) -> None:
        hang = self._doc.get("hang")
        if not isinstance(hang, dict) or hang.get("call") != name:
            return
        if "gpu" in hang and hang["gpu"] != index:
            return
        stamp = self._stamp
        until = time.monotonic() + float(hang.get("seconds", float("inf")))
        while time.monotonic() < until and self._stat() == stamp:
            time.sleep(self.poll_s)
        self.reload()

    def _answer(self, name: str, handle: FakeHandle, args: tuple[Any, ...]) -> Any:
        gpu = self._gpu(handle)
        if "hang" in self._doc:
            self._hang(name, handle.index)
            gpu = self._gpu(handle)
        if name not in gpu:
            raise error("NOT_SUPPORTED")
        answer = _check(gpu[name])
        if name in calls.ARG_NAMES:
            key = calls.ARG_NAMES[name](args)
            if not isinstance(answer, dict) or key not in answer:
                raise error("NOT_SUPPORTED")
            answer = _check(answer[key])
        try:
            return calls.decode(name, answer)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"{self.path}: gpus[{handle.index}].{name}: not an answer of that call ({exc})"
            ) from None

    # -- pynvml's surface ------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        if name in calls.DEVICE_CALLS:

            def call(handle: FakeHandle, *args: Any) -> Any:
                return self._answer(name, handle, args)

            self.__dict__[name] = call  # looked up once
            return call
        value = getattr(pynvml, name)  # constants, struct classes, NVMLError_* classes
        if callable(value) and name.startswith("nvml") and not isinstance(value, type):
            raise AttributeError(f"the fake NVML does not answer {name}")
        return value

    def nvmlInit(self) -> None:
        self.reload()
        self._initialised = True

    def nvmlShutdown(self) -> None:
        self._initialised = False

    def nvmlDeviceGetCount(self) -> int:
        if not self._initialised:
            raise error("UNINITIALIZED")
        self.reload()  # one look at the file per poll: the sampler counts GPUs first
        return len(self._gpus())

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeHandle:
        handle = FakeHandle(int(index))
        self._gpu(handle)
        return handle

    def _system(self, name: str) -> Any:
        if not self._initialised:
            raise error("UNINITIALIZED")
        system = self._doc.get("system", {})
        if name not in system:
            raise error("NOT_SUPPORTED")
        return _check(system[name])

    def nvmlSystemGetDriverVersion(self) -> str:
        return str(self._system("nvmlSystemGetDriverVersion"))

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return int(self._system("nvmlSystemGetCudaDriverVersion"))

    def nvmlDeviceGetClockOffsets(self, handle: FakeHandle, info: Any) -> int:
        answer = self._answer(calls.CLOCK_OFFSETS, handle, ())
        domain = calls.CLOCKS.get(int(info.type), str(info.type))
        if not isinstance(answer, dict) or domain not in answer:
            raise error("NOT_SUPPORTED")
        for name, value in _check(answer[domain]).items():
            setattr(info, name, int(value))
        return int(pynvml.NVML_SUCCESS)

    def nvmlDeviceGetFieldValues(self, handle: FakeHandle, field_ids: list[int]) -> list[Any]:
        answer = self._answer(calls.FIELD_VALUES, handle, ())
        out = []
        for fid in field_ids:
            entry = answer.get(str(fid), {"error": "NOT_SUPPORTED"})
            if isinstance(entry, dict):
                code = error(entry.get("error", "UNKNOWN")).value
                out.append(calls.field_struct(fid, code, pynvml.NVML_VALUE_TYPE_DOUBLE, 0))
            else:
                kind = (
                    pynvml.NVML_VALUE_TYPE_DOUBLE
                    if isinstance(entry, float)
                    else pynvml.NVML_VALUE_TYPE_SIGNED_LONG_LONG
                )
                out.append(calls.field_struct(fid, pynvml.NVML_SUCCESS, kind, entry))
        return out

    # -- events (Xid) --------------------------------------------------------------------
    def _event_ids(self) -> list[tuple[str, dict[str, Any]]]:
        events = self._doc.get("events", [])
        return [(str(e.get("id", i)), e) for i, e in enumerate(events)]

    def nvmlEventSetCreate(self) -> FakeEventSet:
        if not self._initialised:
            raise error("UNINITIALIZED")
        return FakeEventSet()

    def nvmlDeviceRegisterEvents(self, handle: FakeHandle, mask: int, events: FakeEventSet) -> None:
        self._gpu(handle)
        if not int(mask) & pynvml.nvmlEventTypeXidCriticalError:
            raise error("NOT_SUPPORTED")
        events.devices[handle.index] = int(mask)
        self.reload()
        events.seen.update(i for i, e in self._event_ids() if e.get("gpu") == handle.index)

    def nvmlEventSetWait_v2(self, events: FakeEventSet, timeout_ms: int) -> Any:
        until = time.monotonic() + timeout_ms / 1000.0
        while True:
            self.reload()
            for key, event in self._event_ids():
                index = int(event.get("gpu", -1))
                if key in events.seen or index not in events.devices:
                    continue
                events.seen.add(key)
                return SimpleNamespace(
                    device=FakeHandle(index),
                    eventType=pynvml.nvmlEventTypeXidCriticalError,
                    eventData=int(event["xid"]),
                    gpuInstanceId=int(event.get("gpu_instance", 0xFFFFFFFF)),
                    computeInstanceId=int(event.get("compute_instance", 0xFFFFFFFF)),
                )
            left = until - time.monotonic()
            if left <= 0:
                raise error("TIMEOUT")
            time.sleep(min(self.event_poll_s, left))

    def nvmlEventSetFree(self, events: FakeEventSet) -> None:
        events.devices.clear()
