"""One GPU's handle and the calls on it, with NOT_SUPPORTED remembered across polls."""

from __future__ import annotations

from typing import Any

from inferwatch.sources.nvml_calls import field_value

NOT_SUPPORTED, FUNCTION_NOT_FOUND, GPU_IS_LOST = 3, 13, 15  # nvml.h return codes


class GpuLost(Exception):
    """NVML said ``GPU_IS_LOST`` for this GPU."""


class Device:
    """One GPU's handle and the calls on it, with NOT_SUPPORTED remembered by the sampler."""

    def __init__(self, nv: Any, index: int, handle: Any, unsupported: set[tuple[int, str]]) -> None:
        self.nv = nv
        self.index = index
        self.handle = handle
        self.unsupported = unsupported  # (index, call) pairs answered NOT_SUPPORTED, kept
        self.fields: set[str] = set()  # fields answered NOT_SUPPORTED (by every call tried)

    def ask(self, fld: str, *options: tuple[str, tuple[Any, ...]]) -> Any:
        """The first answer of ``options`` (call name, extra arguments); None when none answers
        (remembered per call when NOT_SUPPORTED, and per field when no option is left)."""
        gone = self.unsupported
        tried_all = True
        for name, args in options:
            key = (self.index, f"{fld}:{name}")
            if key in gone:
                continue
            fn = getattr(self.nv, name, None)
            if fn is None:
                gone.add(key)
                continue
            try:
                return fn(self.handle, *args)
            except self.nv.NVMLError as exc:
                code = getattr(exc, "value", None)
                if code == GPU_IS_LOST:
                    raise GpuLost from None
                if code in (NOT_SUPPORTED, FUNCTION_NOT_FOUND):
                    gone.add(key)
                    continue
                tried_all = False  # transient: ask again next poll
        if tried_all:
            self.fields.add(fld)
        return None

    def one(self, fld: str, name: str, *args: Any) -> Any:
        return self.ask(fld, (name, args))

    def field_values(self, fld: str, field_id: int) -> float | None:
        """One ``nvmlDeviceGetFieldValues`` field; its own NOT_SUPPORTED is remembered too."""
        key = (self.index, f"field{field_id}")
        if key in self.unsupported:
            self.fields.add(fld)
            return None
        answer = self.one(fld, "nvmlDeviceGetFieldValues", [field_id])
        if not answer:
            return None
        value = answer[0]
        if value.nvmlReturn in (NOT_SUPPORTED, FUNCTION_NOT_FOUND):
            self.unsupported.add(key)
            self.fields.add(fld)
            return None
        return None if value.nvmlReturn else field_value(value)
