"""The status page's services and downloads: rows from ``/api/v1/status`` (``services``,
``downloads``), pure. A service shows its debounced state, since when, and the check that
failed; a download its state, bytes against the expected size, rate, and a verdict's reason."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from inferwatch.export.page.samples import stamp

GOOD = {"up", "finished", "downloading", "waiting"}


@dataclass(frozen=True, slots=True)
class ProbeView:
    kind: str  # service | download
    name: str
    state: str
    detail: str
    since: str
    ok: bool


def _size(value: object) -> str:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "?"
    number = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(number) < 1024 or unit == "TiB":
            return f"{number:.0f} {unit}" if unit == "B" else f"{number:.1f} {unit}"
        number /= 1024
    return f"{number:.1f} TiB"


def _when(value: object) -> str:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return stamp(float(value)) if ok else ""  # type: ignore[arg-type]


def service_view(doc: Mapping[str, Any]) -> ProbeView:
    state = str(doc.get("state") or "unknown")
    parts = []
    if doc.get("engine"):
        parts.append(f"engine {doc['engine']}")
    if doc.get("failed_check"):
        parts.append(f"failed: {doc['failed_check']}")
    if doc.get("reason"):
        parts.append(str(doc["reason"]))
    if doc.get("startup_overdue"):
        parts.append("start-up overdue")
    return ProbeView("service", str(doc.get("name", "")), state, "; ".join(parts),
                     _when(doc.get("since")), state in GOOD)  # fmt: skip


def download_view(doc: Mapping[str, Any]) -> ProbeView:
    state = str(doc.get("state") or "unknown")
    have, want = doc.get("bytes"), doc.get("expected_bytes")
    parts = [_size(have) + (f" of {_size(want)}" if want else "")]
    rate = (doc.get("rate_bytes_per_second") or {}).get("1m")
    if isinstance(rate, int | float) and rate > 0:
        parts.append(f"{_size(rate)}/s")
    if doc.get("partial_files"):
        parts.append(f"{doc['partial_files']} partial")
    for key in ("reason", "error"):
        if doc.get(key):
            parts.append(str(doc[key]))
    if doc.get("owner"):
        parts.append(f"partial files owned by {doc['owner']}")
    return ProbeView("download", str(doc.get("name", "")), state, "; ".join(parts),
                     _when(doc.get("verdict_at")), state in GOOD)  # fmt: skip


def probe_views(status: Mapping[str, Any]) -> list[ProbeView]:
    services: Sequence[Mapping[str, Any]] = status.get("services") or []
    downloads: Sequence[Mapping[str, Any]] = status.get("downloads") or []
    rows = [service_view(s) for s in services if isinstance(s, Mapping)]
    return rows + [download_view(d) for d in downloads if isinstance(d, Mapping)]


__all__ = ["ProbeView", "download_view", "probe_views", "service_view"]
