"""What one GPU's poll reads, call by call, converted to base units (NVML answers MHz, mW, mJ,
KB/s and percent). Each value goes through ``Device.ask``, which remembers NOT_SUPPORTED."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from inferwatch.sources.nvml_calls import CLOCKS

if TYPE_CHECKING:
    from inferwatch.sources.gpu_readings import GpuReading
    from inferwatch.sources.nvml_device import Device

MHZ: Final = 1e6
# nvml.h's clock-event (throttle) reason bits.
REASONS: Final = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
)
CLOCK_LABELS: Final = {"sm": "sm", "memory": "memory", "graphics": "graphics", "video": "video"}
FI_MEMORY_TEMP: Final = 82  # NVML_FI_DEV_MEMORY_TEMP
FI_RECOVERY_ACTION: Final = 230  # NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (newer drivers)
PSTATE_UNKNOWN: Final = 32
ECC: Final = (
    (0, 0, "corrected", "volatile"),
    (0, 1, "corrected", "aggregate"),
    (1, 0, "uncorrected", "volatile"),
    (1, 1, "uncorrected", "aggregate"),
)
OFFSET_DOMAINS: Final = (
    ("graphics", 0, "nvmlDeviceGetGpcClkVfOffset"),
    ("memory", 2, "nvmlDeviceGetMemClkVfOffset"),
)


def _scaled(value: Any, factor: float) -> float | None:
    return None if value is None else float(value) * factor


def read_values(d: Device, r: GpuReading) -> None:
    _clocks(d, r)
    _offsets(d, r)
    pstate = d.one("performance_state", "nvmlDeviceGetPerformanceState")
    if pstate is not None and int(pstate) != PSTATE_UNKNOWN:
        r.add("inferwatch_gpu_performance_state", pstate)
    reasons = d.ask(
        "throttle_reasons",
        ("nvmlDeviceGetCurrentClocksEventReasons", ()),
        ("nvmlDeviceGetCurrentClocksThrottleReasons", ()),
    )
    if reasons is not None:
        for bit, reason in REASONS:
            r.add("inferwatch_gpu_throttle_reason", 1.0 if int(reasons) & bit else 0.0,
                  reason=reason)  # fmt: skip
    _power_and_heat(d, r)
    _memory(d, r)
    _pcie(d, r)
    _health(d, r)


def _clocks(d: Device, r: GpuReading) -> None:
    for clock_type, name in CLOCKS.items():
        label = CLOCK_LABELS[name]
        for metric, call in (
            ("inferwatch_gpu_clock_hertz", "nvmlDeviceGetClockInfo"),
            ("inferwatch_gpu_clock_max_hertz", "nvmlDeviceGetMaxClockInfo"),
            ("inferwatch_gpu_clock_application_hertz", "nvmlDeviceGetApplicationsClock"),
        ):
            fld = f"{metric.removeprefix('inferwatch_gpu_').removesuffix('_hertz')}.{name}"
            r.add(metric, _scaled(d.one(fld, call, clock_type), MHZ), clock=label)


def _offsets(d: Device, r: GpuReading) -> None:
    """The VF offset through ``nvmlDeviceGetClockOffsets`` (P0), else the per-domain call.

    nvidia-ml-py's wrapper of ``nvmlDeviceGetClockOffsets`` does not check the return code: an
    answer whose allowed range is 0..0 is taken as no answer and the older call is asked."""
    cls = getattr(d.nv, "c_nvmlClockOffset_t", None)
    for domain, clock_type, legacy in OFFSET_DOMAINS:
        mhz: Any = None
        if cls is not None:
            info = cls()
            info.version = getattr(d.nv, "nvmlClockOffset_v1", 0)
            info.type = clock_type
            info.pstate = 0
            answered = d.ask(f"clock_offset.{domain}", ("nvmlDeviceGetClockOffsets", (info,)))
            if answered is not None and (info.minClockOffsetMHz or info.maxClockOffsetMHz):
                mhz = info.clockOffsetMHz
        if mhz is None:
            mhz = d.one(f"clock_offset.{domain}", legacy)
        if mhz is not None:
            d.fields.discard(f"clock_offset.{domain}")
        r.add("inferwatch_gpu_clock_offset_hertz", _scaled(mhz, MHZ), domain=domain)


def _power_and_heat(d: Device, r: GpuReading) -> None:
    r.add("inferwatch_gpu_temperature_celsius",
          d.one("temperature.gpu", "nvmlDeviceGetTemperature", 0), sensor="gpu")  # fmt: skip
    r.add("inferwatch_gpu_temperature_celsius",
          d.field_values("temperature.memory", FI_MEMORY_TEMP), sensor="memory")  # fmt: skip
    for metric, call in (
        ("inferwatch_gpu_power_watts", "nvmlDeviceGetPowerUsage"),
        ("inferwatch_gpu_power_limit_watts", "nvmlDeviceGetPowerManagementLimit"),
        ("inferwatch_gpu_power_enforced_limit_watts", "nvmlDeviceGetEnforcedPowerLimit"),
    ):
        fld = metric.removeprefix("inferwatch_gpu_").removesuffix("_watts")
        r.add(metric, _scaled(d.one(fld, call), 1e-3))
    r.add("inferwatch_gpu_energy_joules_total",
          _scaled(d.one("energy", "nvmlDeviceGetTotalEnergyConsumption"), 1e-3))  # fmt: skip
    fans = d.one("fan", "nvmlDeviceGetNumFans")
    for fan in range(int(fans or 0)):
        speed = d.one("fan", "nvmlDeviceGetFanSpeed_v2", fan)
        r.add("inferwatch_gpu_fan_speed_ratio", _scaled(speed, 0.01), fan=str(fan))


def _memory(d: Device, r: GpuReading) -> None:
    util = d.one("utilization", "nvmlDeviceGetUtilizationRates")
    if util is not None:
        r.add("inferwatch_gpu_utilization_ratio", util.gpu / 100.0)
        r.add("inferwatch_gpu_memory_utilization_ratio", util.memory / 100.0)
    mem = d.one("memory", "nvmlDeviceGetMemoryInfo")
    if mem is not None:
        r.add("inferwatch_gpu_memory_used_bytes", mem.used)
        r.add("inferwatch_gpu_memory_free_bytes", mem.free)
        r.add("inferwatch_gpu_memory_total_bytes", mem.total)


def _pcie(d: Device, r: GpuReading) -> None:
    for metric, call in (
        ("inferwatch_gpu_pcie_link_generation", "nvmlDeviceGetCurrPcieLinkGeneration"),
        ("inferwatch_gpu_pcie_link_generation_max", "nvmlDeviceGetMaxPcieLinkGeneration"),
        ("inferwatch_gpu_pcie_link_width", "nvmlDeviceGetCurrPcieLinkWidth"),
        ("inferwatch_gpu_pcie_link_width_max", "nvmlDeviceGetMaxPcieLinkWidth"),
    ):
        r.add(metric, d.one(metric.removeprefix("inferwatch_gpu_"), call))
    for counter, direction in ((1, "rx"), (0, "tx")):
        kbps = d.one(f"pcie_throughput.{direction}", "nvmlDeviceGetPcieThroughput", counter)
        r.add("inferwatch_gpu_pcie_throughput_bytes_per_second", _scaled(kbps, 1024.0),
              direction=direction)  # fmt: skip
    r.add("inferwatch_gpu_pcie_replay_errors_total",
          d.one("pcie_replay_errors", "nvmlDeviceGetPcieReplayCounter"))  # fmt: skip


def _health(d: Device, r: GpuReading) -> None:
    for err, counter, err_name, counter_name in ECC:
        count = d.one(f"ecc.{err_name}.{counter_name}", "nvmlDeviceGetTotalEccErrors", err, counter)
        r.add("inferwatch_gpu_ecc_errors_total", count, error=err_name, counter=counter_name)
    for cause, name in ((0, "single_bit"), (1, "double_bit")):
        pages = d.one(f"retired_pages.{name}", "nvmlDeviceGetRetiredPages", cause)
        r.add("inferwatch_gpu_retired_pages", None if pages is None else len(pages), cause=name)
    pending = d.one("retired_pages_pending", "nvmlDeviceGetRetiredPagesPendingStatus")
    r.add("inferwatch_gpu_retired_pages_pending", None if pending is None else int(bool(pending)))
    rows = d.one("remapped_rows", "nvmlDeviceGetRemappedRows")
    if rows is not None:
        for kind, value in zip(("correctable", "uncorrectable", "pending", "failure"), rows,
                               strict=False):  # fmt: skip
            r.add("inferwatch_gpu_remapped_rows", value, kind=kind)
    mode = d.one("persistence_mode", "nvmlDeviceGetPersistenceMode")
    r.add("inferwatch_gpu_persistence_mode", None if mode is None else int(bool(mode)))
    if hasattr(d.nv, "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION"):
        r.add("inferwatch_gpu_recovery_action",
              d.field_values("recovery_action", FI_RECOVERY_ACTION))  # fmt: skip
