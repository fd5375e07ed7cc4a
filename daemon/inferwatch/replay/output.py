"""Replay output: JSON lines (DESIGN.md §4 'Replay JSON lines') or text for a person."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime, tzinfo
from typing import Any, TextIO

from inferwatch.derive.engine.line_events import line_event_fields
from inferwatch.event import Event
from inferwatch.parsers.engine_records import EngineRecord

_RESERVED = ("kind", "at", "type", "source", "line")


def iso(at: float, tz: tzinfo) -> str:
    return datetime.fromtimestamp(at, tz).isoformat()


def relative(at: float) -> str:
    """Seconds since boot (or since the start of an untimed file) as an ISO 8601 duration,
    ``PT5400.120000S``: a boot-relative replay never pretends its records happened in 1970."""
    return f"PT{at:.6f}S"


def event_doc(event: Event, tz: tzinfo, at: str | None = None) -> dict[str, Any]:
    """``{"kind": "event", "at", "type", "source", "line", …fields}``; fields as in the corpus
    (``at``: the event's time already formatted)."""
    doc: dict[str, Any] = {
        "kind": "event",
        "at": iso(event.at, tz) if at is None else at,
        "type": event.type,
        "source": event.source,
        "line": event.line,
    }
    for key, value in event.details.items():
        if key not in _RESERVED and key != "alertable":
            doc[key] = value
    for key, value in event.labels.items():
        doc.setdefault(key, value)
    return doc


BATCH = 512
# One encoder, not one per line; no check for circular references (a record's fields and a
# replay's documents are trees): the same text, ~2 µs less for each of a log's stats lines.
_JSON = json.JSONEncoder(ensure_ascii=False, default=str, check_circular=False)


def fields_json(record: EngineRecord) -> str | None:
    """A line event's record fields as the JSON lines writer writes them (the members after
    ``engine``, without braces), for :meth:`Writer.event_fields_json`; None for a record without
    a line event. Pure: the scan workers render it next to the parse."""
    fields = line_event_fields(record)
    return None if fields is None else _JSON.encode(fields)[1:-1]


class Writer:
    def __init__(self, out: TextIO, fmt: str, tz: tzinfo) -> None:
        self.out = out
        self.fmt = fmt
        self.tz = tz
        self.relative = False  # times are seconds since boot: written as durations
        self._iso: tuple[float, str] = (math.nan, "")  # the last time written, formatted
        self._iso_json: tuple[float, str] = (math.nan, "")  # and as a JSON string
        self._lines: list[str] = []  # written in batches: one write per line costs more
        self._heads: dict[tuple[str, str], tuple[str, str]] = {}  # source, engine as JSON

    def _put(self, text: str) -> None:
        self._lines.append(text)
        if len(self._lines) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if self._lines:
            self.out.write("".join(self._lines))
            self._lines.clear()
        self.out.flush()

    def iso(self, at: float) -> str:
        """:func:`iso` in the writer's zone; events come in runs of one time (one stats
        window gives several), so the last formatting is kept."""
        last, text = self._iso
        if at != last:
            text = relative(at) if self.relative else iso(at, self.tz)
            self._iso = (at, text)
        return text

    def _at_json(self, at: float) -> str:
        last, text = self._iso_json
        if at != last:
            text = _JSON.encode(self.iso(at))
            self._iso_json = (at, text)
        return text

    def event(self, event: Event) -> None:
        doc = event_doc(event, self.tz, self.iso(event.at))
        if self.fmt == "jsonl":
            self._json(doc)
            return
        what = _event_text(doc)
        self._put(f"{doc['at']}  {event.type:<15} {what}  [{event.source}:{event.line}]\n")

    def event_doc(self, at: float, fields: Mapping[str, Any]) -> None:
        """A per-line event that has no event-log counterpart (replay's engine lines)."""
        doc = {"kind": "event", "at": self.iso(at), **fields}
        if self.fmt == "jsonl":
            self._json(doc)
            return
        what = " ".join(
            f"{k}={doc[k]}"
            for k in ("engine", "gen_tps", "running", "mal", "event", "signature")
            if doc.get(k) is not None
        )
        self._put(f"{doc['at']}  {doc['type']:<15} {what}  [{doc['source']}:{doc['line']}]\n")

    def event_fields_json(
        self, at: float, kind: str, source: str, line: int, engine: str, fields: str
    ) -> None:
        """:meth:`event_doc` of a JSON lines writer, with the fields already rendered by
        :func:`fields_json` (the same text, byte for byte)."""
        head = self._heads.get((source, engine))
        if head is None:
            head = self._heads[(source, engine)] = (_JSON.encode(source), _JSON.encode(engine))
        src, eng = head
        members = f", {fields}" if fields else ""
        self._put(
            f'{{"kind": "event", "at": {self._at_json(at)}, "type": "{kind}", '
            f'"source": {src}, "line": {line}, "engine": {eng}{members}}}\n'
        )

    def alert(self, doc: Mapping[str, Any]) -> None:
        if self.fmt == "jsonl":
            self._json({"kind": "alert", **doc})
            return
        labels = doc.get("labels", {})
        where = ", ".join(f"{k}={v}" for k, v in labels.items() if k != "alertname")
        summary = doc.get("annotations", {}).get("summary", "")
        self._put(
            f"{doc['at']}  ALERT {doc['state'].upper():<8} {doc['alertname']} ({where}) {summary}\n"
        )

    def summary(self, doc: Mapping[str, Any], text: list[str]) -> None:
        if self.fmt == "jsonl":
            self._json({"kind": "summary", **doc})
        else:
            self._put("\n".join(["", *text, ""]))
        self.flush()

    def _json(self, doc: Mapping[str, Any]) -> None:
        self._put(_JSON.encode(doc) + "\n")


def _event_text(doc: Mapping[str, Any]) -> str:
    parts = [f"kind={doc['kind']}"] if doc.get("type") == "gpu_driver_fault" else []
    for key in ("classification", "xid", "sxid", "pci_bus_id", "nvrm_gpu", "signature", "name",
                "pid"):  # fmt: skip
        value = doc.get(key)
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            parts.append(f"{key}={value}")
    if doc.get("gpus"):
        parts.append("gpus=" + ",".join(doc["gpus"]))
    if doc.get("diagnosis"):
        parts.append(f"— {doc['diagnosis']}")
    return " ".join(parts)


def busy_text(engines: list[dict[str, Any]], verdict: str, tz: tzinfo) -> list[str]:
    """The owner's judgment, as text: per busy period decode, MAL, step rate; then the verdict."""
    lines = []
    for stream in engines:
        name = stream["engine"] + (f" dp_rank {stream['dp_rank']}" if stream.get("dp_rank") else "")
        lines.append(f"engine {name}:")
        for p in stream["busy_periods"]:
            span = f"{iso(p['start'], tz)} to {iso(p['end'], tz)}: "
            lines.append(
                "  "
                + span
                + ", ".join(
                    f"{k} {p[k]}"
                    for k in ("decode", "mal", "step_rate", "running")
                    if p.get(k) is not None
                )
                + (f" — {p['verdict']}" if p.get("verdict") else "")
            )
    lines.append(f"verdict: {verdict}")
    return lines
