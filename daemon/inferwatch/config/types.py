"""Field types shared by the configuration models: durations, sizes, listen addresses, secrets."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, SecretStr

from inferwatch.durations import DurationError, parse_duration_s
from inferwatch.redact import register_secret


def parse_duration(value: Any) -> float:
    """A Prometheus duration (``1h30m``, ``10s``, ``250ms``) or a number of seconds.

    The string grammar is :mod:`inferwatch.durations`'s; only the framing is the
    configuration's own: bare numbers are seconds, surrounding blanks are ignored, and the
    messages name the units because a person edits this file."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 10s, 5m or 1h30m")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError("a duration cannot be negative")
        return float(value)
    if not isinstance(value, str):
        raise ValueError("expected a duration such as 10s, 5m or 1h30m")
    try:
        return parse_duration_s(value.strip())
    except DurationError:
        raise ValueError(
            f"invalid duration {value!r}: use units y w d h m s ms, e.g. 1h30m"
        ) from None


def format_duration(seconds: float) -> str:
    if seconds == 0:
        return "0s"
    ms = round(seconds * 1000)
    out = ""
    for unit, suffix in ((86400_000, "d"), (3600_000, "h"), (60_000, "m"), (1000, "s"), (1, "ms")):
        if ms >= unit:
            out += f"{ms // unit}{suffix}"
            ms %= unit
    return out


Duration = Annotated[float, BeforeValidator(parse_duration), PlainSerializer(format_duration)]

_SIZE = re.compile(r"(\d+)\s*([KMGT]i?B|B)?", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "b": 1, "kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30, "tb": 1 << 40}


def parse_size(value: Any) -> int:
    """A size in bytes: a number, or a number with a unit as Prometheus writes them (``64MB``,
    ``512KiB``; KB/KiB, MB/MiB, GB/GiB and TB/TiB are all powers of 1024, as in Prometheus)."""
    if isinstance(value, bool):
        raise ValueError("expected a size such as 32MB or 512KiB")
    if isinstance(value, int):
        return value
    match = _SIZE.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"invalid size {value!r}: use a number of bytes or B, KB, MB, GB, TB")
    unit = (match.group(2) or "").lower().replace("ib", "b")
    return int(match.group(1)) * _SIZE_UNITS[unit]


ByteSize = Annotated[int, BeforeValidator(parse_size)]


def parse_listen(value: Any) -> str:
    """``HOST:PORT`` (IPv6 in brackets); port 0 lets the kernel choose."""
    if not isinstance(value, str):
        raise ValueError("expected HOST:PORT, e.g. 127.0.0.1:9945")
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"invalid listen address {value!r}: expected HOST:PORT")
    return value


ListenAddress = Annotated[str, BeforeValidator(parse_listen)]


def split_listen(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return host.strip("[]"), int(port)


def resolve_secret(value: Any) -> SecretStr:
    """Resolve ``env:NAME`` and ``file:/path`` references; register the value for redaction."""
    if isinstance(value, SecretStr):
        return value
    if not isinstance(value, str):
        raise ValueError("expected a string, env:NAME or file:/path")
    if value.startswith("env:"):
        name = value[4:]
        if name not in os.environ:
            raise ValueError(f"environment variable {name} is not set")
        secret = os.environ[name]
    elif value.startswith("file:"):
        secret = read_secret_file(value[5:])
    else:
        secret = value
    register_secret(secret)
    return SecretStr(secret)


def read_secret_file(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ValueError(f"cannot read secret file {path}: {exc.strerror}") from None


Secret = Annotated[SecretStr, BeforeValidator(resolve_secret)]
