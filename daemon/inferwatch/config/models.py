"""The configuration file, as typed models (DESIGN.md §4 'Config').

Every model rejects unknown keys. Defaults are the embedded configuration: a file that sets
nothing gets a working daemon on loopback.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    HttpUrl,
    ValidationInfo,
    field_validator,
    model_validator,
)

from inferwatch.config.alertmanager import (
    Digest,
    GlobalConfig,
    InhibitRule,
    Receiver,
    Route,
    TimeInterval,
)
from inferwatch.config.defaults import (
    ALERTS_PER_RULE,
    ANCHOR_MIN_MAL,
    CORRELATION_WINDOW_S,
    DECODE_ANCHOR,
    DECODE_COLLAPSE_RATIO,
    LABEL_VALUES,
    SERIES_PER_METRIC,
    SERIES_TOTAL,
    SHIPPED_RULES,
    STATS_STALE_AFTER_S,
    STEP_RATE_REGRESSION_RATIO,
)
from inferwatch.config.downloads import Downloads
from inferwatch.config.types import ByteSize, Duration, ListenAddress
from inferwatch.config.web import WebConfig

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
DEFAULT_LISTEN = "127.0.0.1:9945"
REFERENCES_CHECKED = "references_checked"
"""Validation context key: the caller checked cross-references (config.crossref) itself."""


def _check_name(v: str) -> str:
    """A name that becomes a label value and part of a source's name."""
    if not _NAME.match(v):
        raise ValueError("use letters, digits, '.', '_' and '-' only")
    return v


Name = Annotated[str, AfterValidator(_check_name)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PathsConfig(_Strict):
    """Roots of the host's pseudo-files, so tests point the daemon at fixtures."""

    proc: Path = Path("/proc")
    sys: Path = Path("/sys")
    kmsg: Path = Path("/dev/kmsg")


def _off(value: object) -> object:
    """YAML 1.1 reads a bare ``off`` as the boolean false: take it as the word it was."""
    return "off" if value is False else value


class KernelConfig(_Strict):
    source: Literal["auto", "kmsg", "journald", "file", "off"] = "auto"
    path: Path | None = None
    alert_max_age: Duration = 600.0
    correlation_window: Duration = CORRELATION_WINDOW_S

    @field_validator("source", mode="before")
    @classmethod
    def _source_off(cls, v: object) -> object:
        return _off(v)

    @model_validator(mode="after")
    def _file_needs_path(self) -> KernelConfig:
        if self.source == "file" and self.path is None:
            raise ValueError("kernel.source 'file' needs kernel.path")
        return self


class CanaryConfig(_Strict):
    """A known-answer request to the engine's OpenAI API, sent only while it is idle."""

    prompt: str = "What is the capital of France? Answer with one word."
    expect: str = "Paris"
    url: HttpUrl | None = None  # default: the origin of the engine's metrics_url
    every: Duration = Field(default=1800.0, gt=0)
    max_tokens: int = Field(default=16, ge=1, le=4096)
    model: str | None = None  # default: the first model /v1/models lists
    timeout: Duration = Field(default=60.0, gt=0)


class EngineConfig(_Strict):
    name: Name
    kind: Literal["vllm", "sglang", "llamacpp"] = "vllm"
    log: list[str] = Field(default_factory=list)
    journald_unit: str | None = None
    container: str | None = None
    metrics_url: HttpUrl | None = None
    scrape_interval: Duration = 5.0
    scrape_timeout: Duration = Field(default=10.0, gt=0)  # the whole scrape, body included
    body_size_limit: ByteSize = Field(default=32 << 20, ge=1024)
    decode_anchor: float = Field(default=DECODE_ANCHOR, gt=0)
    anchor_min_mal: float = Field(default=ANCHOR_MIN_MAL, ge=1)
    decode_collapse: float | None = Field(default=None, gt=0)
    decode_collapse_ratio: float = Field(default=DECODE_COLLAPSE_RATIO, gt=0, lt=1)
    step_rate_regression_ratio: float = Field(default=STEP_RATE_REGRESSION_RATIO, gt=0, lt=1)
    stats_stale_after: Duration = Field(default=STATS_STALE_AFTER_S, gt=0)
    alert_max_age: Duration = 600.0  # a first start's older log lines are counted, never paged
    canary: CanaryConfig | None = None  # off by default: it costs GPU time

    @field_validator("log", mode="before")
    @classmethod
    def _one_or_many(cls, v: object) -> object:
        return [v] if isinstance(v, str) else v


class ClockOffsets(_Strict):
    """Expected VF clock offsets in MHz (what the tuning unit applies at boot)."""

    graphics: int | None = None
    memory: int | None = None


class GpuDeviceConfig(_Strict):
    """What one GPU should look like, picked by exactly one of ``index``, ``uuid``, ``serial``."""

    index: int | None = Field(default=None, ge=0)
    uuid: str | None = None
    serial: str | None = None
    clock_offset_mhz: ClockOffsets | None = None
    sm_clock_lock_mhz: float | None = Field(default=None, gt=0)
    sm_clock_tolerance_mhz: float = Field(default=15.0, ge=0)
    pcie_generation: int | None = Field(default=None, ge=1, le=7)
    pcie_width: int | None = Field(default=None, ge=1, le=32)
    power_limit_watts: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _one_selector(self) -> GpuDeviceConfig:
        chosen = [k for k in ("index", "uuid", "serial") if getattr(self, k) is not None]
        if len(chosen) != 1:
            raise ValueError(
                "pick the GPU by exactly one of index, uuid, serial"
                + (f" (got {', '.join(chosen)})" if chosen else "")
            )
        return self

    def selector(self) -> tuple[str, str]:
        """``("index", "0")``, ``("uuid", "GPU-…")`` or ``("serial", "…")``."""
        if self.index is not None:
            return "index", str(self.index)
        if self.uuid is not None:
            return "uuid", self.uuid
        return "serial", str(self.serial)


class GpuConfig(_Strict):
    backend: Literal["auto", "nvml", "fake", "off"] = "auto"
    profile: Path | None = None
    expected: int | None = Field(default=None, ge=0)
    interval: Duration = 2.0
    call_timeout: Duration = Field(default=5.0, gt=0)
    devices: list[GpuDeviceConfig] = Field(default_factory=list)

    @field_validator("backend", mode="before")
    @classmethod
    def _backend_off(cls, v: object) -> object:
        return _off(v)

    @model_validator(mode="after")
    def _fake_needs_profile(self) -> GpuConfig:
        if self.backend == "fake" and self.profile is None:
            raise ValueError("gpus.backend 'fake' needs gpus.profile (a JSON NVML profile)")
        return self


class ServiceConfig(_Strict):
    """A service whose readiness is probed (issue 14): the unit or container, its process's
    command line, the port it listens on, and an HTTP or WebSocket handshake, debounced."""

    name: Name
    engine: str | None = None  # the engine it serves: its series and alerts carry ``engine``
    unit: str | None = None
    user_unit: str | None = None
    container: str | None = None
    signature: str | None = None  # a substring of the main process's command line
    port: int | None = Field(default=None, ge=1, le=65535)
    port_file: Path | None = None  # a file holding the port (written by the service)
    http_url: str | None = None  # ``{port}`` is replaced by the port (``port``/``port_file``)
    expect_model: str | None = None  # http_url is then /v1/models and must list it
    ws_url: str | None = None
    interval: Duration = Field(default=10.0, gt=0)
    startup_grace: Duration = 600.0
    up_after: int = Field(default=2, ge=1)
    down_after: int = Field(default=3, ge=1)
    flap_changes: int = Field(default=6, ge=1)
    flap_window: Duration = Field(default=600.0, gt=0)

    @field_validator("http_url", "ws_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is not None and not re.match(r"^(https?|wss?)://[^/\s]+", v):
            raise ValueError("expected an absolute URL such as http://127.0.0.1:8000/health")
        return v

    @model_validator(mode="after")
    def _checks(self) -> ServiceConfig:
        owners = [k for k in ("unit", "user_unit", "container") if getattr(self, k)]
        if len(owners) > 1:
            raise ValueError(f"set only one of unit, user_unit and container (got {owners})")
        if self.port is not None and self.port_file is not None:
            raise ValueError("set port or port_file, not both")
        if self.expect_model is not None and self.http_url is None:
            raise ValueError("expect_model needs http_url (the engine's /v1/models)")
        for key in ("http_url", "ws_url"):
            url = getattr(self, key)
            if url and "{port}" in url and self.port is None and self.port_file is None:
                raise ValueError(f"{key} uses {{port}}: set port or port_file")
        checks = (*owners, self.signature, self.port, self.port_file, self.http_url, self.ws_url)
        if not any(c is not None for c in checks):
            raise ValueError(
                "nothing to probe: set unit, user_unit, container, signature, port, port_file,"
                " http_url or ws_url"
            )
        return self


class HostConfig(_Strict):
    """The host's memory (meminfo, pressure stalls): on by default."""

    enabled: bool = True
    interval: Duration = Field(default=10.0, gt=0)
    # files whose page-cache residency is sampled every 10 minutes (e.g. a memory-mapped table)
    resident_files: list[Path] = Field(default_factory=list)


class SilenceFile(_Strict):
    """A maintenance flag file: while it exists, alerts matching ``matchers`` are silenced."""

    path: Path
    matchers: list[str] = Field(default_factory=list)
    comment: str = ""


class LimitsConfig(_Strict):
    """How much the host's own words may make (hardening): series in all and per metric, values
    per label (``label_values`` adds to or overrides the defaults), alerts per alerting rule
    (Prometheus's group ``limit``, for groups that set none; 0: none)."""

    series_total: int = Field(default=SERIES_TOTAL, ge=1)
    series_per_metric: int = Field(default=SERIES_PER_METRIC, ge=1)
    label_values: dict[str, int] = Field(default_factory=lambda: dict(LABEL_VALUES))
    alerts_per_rule: int = Field(default=ALERTS_PER_RULE, ge=0)

    @field_validator("label_values")
    @classmethod
    def _label_values(cls, v: dict[str, int]) -> dict[str, int]:
        for label, limit in v.items():
            if not _LABEL.match(label):
                raise ValueError(f"{label!r} is not a label name")
            if limit < 1:
                raise ValueError(f"{label}: the limit must be at least 1")
        return {**LABEL_VALUES, **v}


class OutboxConfig(_Strict):
    """How long and how often an undelivered message is tried again (inferwatch extension)."""

    max_age: Duration = Field(default=24 * 3600.0, gt=0)
    retry_initial: Duration = Field(default=1.0, gt=0)
    retry_max: Duration = Field(default=300.0, gt=0)


# One host: the first critical alert leaves at once, the rest of a cascade follows in one message.
# An engine crash and the kernel's word on the same moment (an all-ranks MMU fault, a hardware
# Xid) are one story: they wait three seconds for each other and leave as one message, the
# crash's diagnosis saying which it was.
INCIDENT_ALERTS = "EngineCrashed|GpuMmuFaultOnAllRanks|GpuHardwareXid"
DEFAULT_ROUTE = Route(
    receiver="console",
    group_by=["alertname"],
    group_wait=10.0,
    group_interval=300.0,
    repeat_interval=4 * 3600.0,
    routes=[
        Route(
            matchers=[f'alertname=~"{INCIDENT_ALERTS}"'],
            group_by=[],
            group_wait=3.0,
            group_interval=10.0,
        ),
        Route(matchers=['severity="critical"'], group_wait=0.0, group_interval=10.0),
    ],
)


class Config(_Strict):
    listen: ListenAddress = DEFAULT_LISTEN
    state_dir: Path | None = None
    language: Literal["en", "zh"] = "en"
    external_labels: dict[str, str] = Field(default_factory=dict)
    # Where people open this host's status (``$externalURL`` in rule templates, ``externalURL``
    # in webhook payloads, a "Status" link in messages) and its Grafana (a "Dashboard" link).
    external_url: HttpUrl | None = None
    grafana_url: HttpUrl | None = None
    paths: PathsConfig = PathsConfig()
    kernel: KernelConfig = KernelConfig()
    engines: list[EngineConfig] = Field(default_factory=list)
    gpus: GpuConfig = GpuConfig()
    services: list[ServiceConfig] = Field(default_factory=list)
    downloads: Downloads = Field(default_factory=list)
    host: HostConfig = HostConfig()
    rule_files: list[str] = Field(default_factory=lambda: [SHIPPED_RULES])
    silence_files: list[SilenceFile] = Field(default_factory=list)
    digests: list[Digest] = Field(default_factory=list)
    outbox: OutboxConfig = OutboxConfig()
    # TLS and basic auth for the HTTP server (exporter-toolkit's web-config keys)
    web: WebConfig | None = None
    limits: LimitsConfig = LimitsConfig()
    global_: GlobalConfig = Field(default=GlobalConfig(), alias="global")
    route: Route = Field(default_factory=lambda: DEFAULT_ROUTE)
    receivers: list[Receiver] = Field(
        default_factory=lambda: [
            Receiver.model_validate({"name": "console", "console_configs": [{}]})
        ]
    )
    inhibit_rules: list[InhibitRule] = Field(default_factory=list)
    time_intervals: list[TimeInterval] = Field(default_factory=list)
    fallback_receiver: str | None = None
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _cross_references(self, info: ValidationInfo) -> Config:
        if info.context and info.context.get(REFERENCES_CHECKED):
            return self  # the loader checked them on the file, each at its place
        names = [e.name for e in self.engines]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"engine names must be unique: {', '.join(dupes)}")
        services = [s.name for s in self.services]
        dupes = sorted({n for n in services if services.count(n) > 1})
        if dupes:
            raise ValueError(f"service names must be unique: {', '.join(dupes)}")
        receivers = {r.name for r in self.receivers}
        for ref in _route_receivers(self.route):
            if ref not in receivers:
                raise ValueError(f"route names receiver {ref!r}, which is not defined")
        if self.fallback_receiver and self.fallback_receiver not in receivers:
            raise ValueError(f"fallback_receiver {self.fallback_receiver!r} is not defined")
        return self


def _route_receivers(route: Route) -> list[str]:
    found = [route.receiver] if route.receiver else []
    for child in route.routes:
        found.extend(_route_receivers(child))
    return found
