"""The NVML calls the GPU sampler makes, and how each answer is written in a JSON profile.

One table serves both directions: ``inferwatch nvml-snapshot`` records a real host's answers
through it (:func:`encode`), and the fake backend answers from a profile through it
(:func:`decode`), so a profile written on a real host replays the same calls the same way.

Profile layout (``inferwatch-nvml-profile/1``)::

    {"format": "inferwatch-nvml-profile/1",
     "system": {"nvmlSystemGetDriverVersion": "550.54.14", "nvmlSystemGetCudaDriverVersion": 12040},
     "gpus": [{"nvmlDeviceGetUUID": "GPU-…", "nvmlDeviceGetClockInfo": {"sm": 1395, …}, …}, …],
     "events": [{"gpu": 0, "xid": 79}], "hang": {"call": "nvmlDeviceGetPowerUsage", "seconds": 30}}

Each GPU entry maps a call name to its answer in NVML's own units (MHz, mW, mJ, KB/s, %):
a plain value, a struct as an object of its fields, or, for calls taking an argument (a clock
domain, a sensor, a fan), an object keyed by the argument's name (:data:`ARG_NAMES`). Any answer
may be ``{"error": "NOT_SUPPORTED"}`` (an ``NVML_ERROR_*`` name without the prefix); a call the
entry does not list answers NOT_SUPPORTED.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, Final

FORMAT: Final = "inferwatch-nvml-profile/1"

# NVML's enum values (nvml.h) by the names a profile uses.
CLOCKS: Final = {0: "graphics", 1: "sm", 2: "memory", 3: "video"}
SENSORS: Final = {0: "gpu"}
PCIE_COUNTERS: Final = {0: "tx", 1: "rx"}
ECC_ERRORS: Final = {0: "corrected", 1: "uncorrected"}
ECC_COUNTERS: Final = {0: "volatile", 1: "aggregate"}
RETIRE_CAUSES: Final = {0: "single_bit", 1: "double_bit"}


def _one(names: dict[int, str]) -> Callable[[tuple[Any, ...]], str]:
    def key(args: tuple[Any, ...]) -> str:
        return names.get(int(args[0]), str(args[0]))

    return key


def _ecc_key(args: tuple[Any, ...]) -> str:
    return f"{ECC_ERRORS.get(int(args[0]), args[0])}/{ECC_COUNTERS.get(int(args[1]), args[1])}"


def _fan_key(args: tuple[Any, ...]) -> str:
    return str(int(args[0]))


ArgKey = Callable[[tuple[Any, ...]], str]
# Per-device calls taking one more argument: how that argument is named in a profile.
ARG_NAMES: Final[dict[str, ArgKey]] = {
    "nvmlDeviceGetClockInfo": _one(CLOCKS),
    "nvmlDeviceGetMaxClockInfo": _one(CLOCKS),
    "nvmlDeviceGetApplicationsClock": _one(CLOCKS),
    "nvmlDeviceGetTemperature": _one(SENSORS),
    "nvmlDeviceGetFanSpeed_v2": _fan_key,
    "nvmlDeviceGetPcieThroughput": _one(PCIE_COUNTERS),
    "nvmlDeviceGetTotalEccErrors": _ecc_key,
    "nvmlDeviceGetRetiredPages": _one(RETIRE_CAUSES),
}
# Calls answering a struct: the fields kept (the sampler reads no others).
STRUCTS: Final[dict[str, tuple[str, ...]]] = {
    "nvmlDeviceGetPciInfo": ("busId",),
    "nvmlDeviceGetUtilizationRates": ("gpu", "memory"),
    "nvmlDeviceGetMemoryInfo": ("total", "free", "used"),
}
PROCESS_CALLS: Final = (
    "nvmlDeviceGetComputeRunningProcesses",
    "nvmlDeviceGetGraphicsRunningProcesses",
)
PROCESS_FIELDS: Final = ("pid", "usedGpuMemory", "gpuInstanceId", "computeInstanceId")
# Per-device calls answering a plain value (a number, a string, or a list of numbers).
SCALARS: Final = frozenset(
    {
        "nvmlDeviceGetUUID",
        "nvmlDeviceGetName",
        "nvmlDeviceGetSerial",
        "nvmlDeviceGetVbiosVersion",
        "nvmlDeviceGetGpcClkVfOffset",
        "nvmlDeviceGetMemClkVfOffset",
        "nvmlDeviceGetPerformanceState",
        "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetCurrentClocksThrottleReasons",
        "nvmlDeviceGetPowerUsage",
        "nvmlDeviceGetPowerManagementLimit",
        "nvmlDeviceGetEnforcedPowerLimit",
        "nvmlDeviceGetTotalEnergyConsumption",
        "nvmlDeviceGetNumFans",
        "nvmlDeviceGetCurrPcieLinkGeneration",
        "nvmlDeviceGetMaxPcieLinkGeneration",
        "nvmlDeviceGetCurrPcieLinkWidth",
        "nvmlDeviceGetMaxPcieLinkWidth",
        "nvmlDeviceGetPcieReplayCounter",
        "nvmlDeviceGetRetiredPagesPendingStatus",
        "nvmlDeviceGetRemappedRows",
        "nvmlDeviceGetPersistenceMode",
        "nvmlDeviceGetMigMode",
    }
)
SYSTEM_CALLS: Final = ("nvmlSystemGetDriverVersion", "nvmlSystemGetCudaDriverVersion")
# Special shapes, handled by the fake and the recorder themselves.
CLOCK_OFFSETS: Final = "nvmlDeviceGetClockOffsets"
FIELD_VALUES: Final = "nvmlDeviceGetFieldValues"
OFFSET_FIELDS: Final = ("clockOffsetMHz", "minClockOffsetMHz", "maxClockOffsetMHz")
DEVICE_CALLS: Final = frozenset(
    {*ARG_NAMES, *STRUCTS, *PROCESS_CALLS, *SCALARS, CLOCK_OFFSETS, FIELD_VALUES}
)


def plain(value: Any) -> Any:
    """A JSON-ready copy: bytes decoded, tuples as lists."""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def encode(name: str, result: Any) -> Any:
    """A real (or fake) call's result as a profile answer."""
    if name in STRUCTS:
        return {f: plain(getattr(result, f)) for f in STRUCTS[name]}
    if name in PROCESS_CALLS:
        return [
            {f: plain(getattr(p, f, None)) for f in PROCESS_FIELDS if hasattr(p, f)} for p in result
        ]
    return plain(result)


def decode(name: str, answer: Any) -> Any:
    """A profile answer as the call's result, shaped like pynvml's."""
    if name in STRUCTS:
        return SimpleNamespace(**answer)
    if name in PROCESS_CALLS:
        return [SimpleNamespace(**p) for p in answer]
    if name == "nvmlDeviceGetRemappedRows":
        return tuple(answer)
    return answer


def field_value(value: Any) -> float:
    """The number in an ``nvmlFieldValue_t`` (read by its ``valueType``)."""
    member = ("dVal", "uiVal", "ulVal", "ullVal", "sllVal", "siVal", "usVal")
    return float(getattr(value.value, member[int(value.valueType)]))


def field_struct(field_id: int, return_code: int, value_type: int, number: float) -> Any:
    """An ``nvmlFieldValue_t``-like answer of the fake."""
    as_int = int(number)
    value = SimpleNamespace(
        dVal=float(number), uiVal=as_int, ulVal=as_int, ullVal=as_int, sllVal=as_int,
        siVal=as_int, usVal=as_int,
    )  # fmt: skip
    return SimpleNamespace(
        fieldId=field_id, scopeId=0, nvmlReturn=return_code, valueType=value_type, value=value
    )
