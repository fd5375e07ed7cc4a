"""What a service's state commands print: ``systemctl show -p …`` (``KEY=VALUE`` lines), ``docker
inspect --format '{{json .State}}\\t{{.RestartCount}}'``, an OpenAI ``/v1/models`` list, a port
file. Pure functions: text in, facts out; text they cannot read is ``None``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

# systemd's ActiveState values under which the unit's process runs or is being started
UNIT_RUNNING = frozenset({"active", "reloading"})
UNIT_ALIVE = frozenset({"active", "reloading", "activating", "deactivating"})


@dataclass(frozen=True, slots=True)
class UnitState:
    load: str
    active: str
    sub: str
    main_pid: int
    restarts: int | None
    exit_status: int | None
    result: str

    @property
    def summary(self) -> str:
        text = f"{self.active}/{self.sub}" if self.sub else self.active
        if self.active in ("failed", "inactive") and self.result not in ("", "success"):
            text += f", result {self.result}"
            if self.exit_status:
                text += f", exit status {self.exit_status}"
        return text


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text not in (None, "", "[not set]") else None
    except ValueError:
        return None


def parse_unit_show(text: str) -> UnitState | None:
    """``systemctl show -p LoadState,ActiveState,…`` output; None without an ActiveState."""
    props: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            props[key.strip()] = value.strip()
    if "ActiveState" not in props:
        return None
    return UnitState(
        load=props.get("LoadState", ""),
        active=props["ActiveState"],
        sub=props.get("SubState", ""),
        main_pid=_int(props.get("MainPID")) or 0,
        restarts=_int(props.get("NRestarts")),
        exit_status=_int(props.get("ExecMainStatus")),
        result=props.get("Result", ""),
    )


@dataclass(frozen=True, slots=True)
class ContainerState:
    status: str  # running, exited, restarting, …
    running: bool
    pid: int
    health: str  # "" without a HEALTHCHECK, else starting | healthy | unhealthy
    restarts: int | None
    exit_code: int | None
    started_at: float | None


def _docker_time(text: object) -> float | None:
    """Docker's RFC 3339 time with nanoseconds (``2024-05-01T10:00:00.123456789Z``)."""
    if not isinstance(text, str) or not text or text.startswith("0001-"):
        return None
    head, dot, frac = text.rstrip("Z").partition(".")
    zone = "+00:00"
    for sign in ("+", "-"):
        if sign in frac:
            frac, _, rest = frac.partition(sign)
            zone = sign + rest
    try:
        stamp = datetime.fromisoformat(head + zone)
    except ValueError:
        return None
    return stamp.timestamp() + (float("0." + frac) if dot and frac.isdigit() else 0.0)


def parse_container_state(text: str) -> ContainerState | None:
    state_text, _, restarts = text.strip().partition("\t")
    try:
        state = json.loads(state_text)
    except ValueError:
        return None
    if not isinstance(state, dict):
        return None
    health = state.get("Health")
    return ContainerState(
        status=str(state.get("Status", "")),
        running=bool(state.get("Running")),
        pid=int(state.get("Pid") or 0),
        health=str(health.get("Status", "")) if isinstance(health, dict) else "",
        restarts=_int(restarts.strip()),
        exit_code=_int(str(state.get("ExitCode", ""))),
        started_at=_docker_time(state.get("StartedAt")),
    )


def listed_models(body: bytes) -> list[str] | None:
    """The model ids of an OpenAI ``/v1/models`` answer; None when it is not one."""
    try:
        doc = json.loads(body)
    except ValueError:
        return None
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        return None
    return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]


def parse_port_file(text: str) -> int | None:
    """A port file: a port number (``8000``), or ``host:port``, first line."""
    lines = text.strip().splitlines()
    first = lines[0].strip() if lines else ""
    port = _int(first.rpartition(":")[2])
    return port if port is not None and 0 < port < 65536 else None
