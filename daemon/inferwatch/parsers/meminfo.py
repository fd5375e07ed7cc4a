"""``/proc/meminfo`` and ``/proc/pressure/<resource>`` (pressure stall information), read into
numbers. Pure functions; a line they cannot read is skipped."""

from __future__ import annotations

UNITS = {"kB": 1024, "": 1}


def parse_meminfo(text: str) -> dict[str, int]:
    """``Key:   value kB`` lines as bytes (counts such as HugePages_Total as they are)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        fields = rest.split()
        if not sep or not fields or len(fields) > 2:
            continue
        unit = fields[1] if len(fields) == 2 else ""
        if unit not in UNITS or not fields[0].isdigit():
            continue
        out[key.strip()] = int(fields[0]) * UNITS[unit]
    return out


def parse_pressure(text: str) -> dict[str, float]:
    """``some|full avg10=… total=<µs>`` lines: each scope's stalled time in seconds."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        scope, _, rest = line.partition(" ")
        if scope not in ("some", "full"):
            continue
        for field in rest.split():
            name, _, value = field.partition("=")
            if name == "total" and value.isdigit():
                out[scope] = int(value) / 1e6
    return out
