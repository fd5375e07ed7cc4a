"""``inferwatch nvml-snapshot``: a host's NVML answers, written as a fake-backend profile.

The sampler polls once through :class:`Recorder`, a stand-in for the NVML module that passes
each call on and notes the answer (or the error) in the profile layout of
:mod:`inferwatch.sources.nvml_calls`. What is recorded is exactly what the sampler asks, so the
fake backend replays the same poll: a snapshot of the fake answering a profile is that profile.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inferwatch.sources import nvml_calls as calls
from inferwatch.sources.nvml_fake import error_name
from inferwatch.sources.nvml_sampler import NvmlSampler, load_pynvml


class Recorder:
    """Passes every call to ``nv`` and keeps the answers, per GPU, as a profile."""

    def __init__(self, nv: Any) -> None:
        self.nv = nv
        self.system: dict[str, Any] = {}
        self.gpus: dict[int, dict[str, Any]] = {}
        self._handles: dict[int, tuple[Any, int]] = {}  # id(handle) -> (handle, index)

    def _error_name(self, exc: Any) -> str:
        return error_name(int(exc.value))

    def _note(self, gpu: dict[str, Any], name: str, key: str | None, answer: Any) -> None:
        if key is None:
            gpu[name] = answer
        else:
            slot = gpu.setdefault(name, {})
            if isinstance(slot, dict) and set(slot) != {"error"}:
                slot[key] = answer

    def __getattr__(self, name: str) -> Any:
        target = getattr(self.nv, name)
        if name == "nvmlDeviceGetHandleByIndex":
            return self._by_index(target)
        if name in calls.SYSTEM_CALLS:
            return self._system_call(name, target)
        if name in calls.DEVICE_CALLS:
            return self._device_call(name, target)
        return target

    def _by_index(self, target: Callable[..., Any]) -> Callable[..., Any]:
        def call(index: int) -> Any:
            handle = target(index)
            self._handles[id(handle)] = (handle, int(index))
            self.gpus.setdefault(int(index), {})
            return handle

        return call

    def _system_call(self, name: str, target: Callable[..., Any]) -> Callable[..., Any]:
        def call() -> Any:
            try:
                result = target()
            except self.nv.NVMLError as exc:
                self.system[name] = {"error": self._error_name(exc)}
                raise
            self.system[name] = calls.plain(result)
            return result

        return call

    def _device_call(self, name: str, target: Callable[..., Any]) -> Callable[..., Any]:
        def call(handle: Any, *args: Any) -> Any:
            gpu = self.gpus.setdefault(self._handles[id(handle)][1], {})
            key = calls.ARG_NAMES[name](args) if name in calls.ARG_NAMES else None
            if name == calls.CLOCK_OFFSETS:
                key = calls.CLOCKS.get(int(args[0].type), str(args[0].type))
            try:
                result = target(handle, *args)
            except self.nv.NVMLError as exc:
                self._note(gpu, name, key, {"error": self._error_name(exc)})
                raise
            if name == calls.CLOCK_OFFSETS:
                self._note(
                    gpu, name, key, {f: int(getattr(args[0], f)) for f in calls.OFFSET_FIELDS}
                )
            elif name == calls.FIELD_VALUES:
                for fid, value in zip(args[0], result, strict=False):
                    answer: Any = (
                        {"error": error_name(value.nvmlReturn)}
                        if value.nvmlReturn
                        else _field_number(value)
                    )
                    self._note(gpu, name, str(fid), answer)
            else:
                self._note(gpu, name, key, calls.encode(name, result))
            return result

        return call

    def profile(self) -> dict[str, Any]:
        return {
            "format": calls.FORMAT,
            "system": self.system,
            "gpus": [self.gpus[i] for i in sorted(self.gpus)],
        }


def _field_number(value: Any) -> float | int:
    number = calls.field_value(value)
    return number if int(value.valueType) == 0 else int(number)


def snapshot(module: Callable[[], Any] = load_pynvml) -> dict[str, Any]:
    """One poll of every GPU through a recorder; raises ``NoData`` where there is no NVML."""
    recorder: Recorder | None = None

    def recording() -> Any:
        nonlocal recorder
        recorder = Recorder(module())
        return recorder

    NvmlSampler(recording).read()
    assert recorder is not None
    return recorder.profile()


def write_profile(doc: dict[str, Any], output: Path | None) -> str:
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    if output is not None:
        tmp = output.with_name(f".{output.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(output)
    return text
