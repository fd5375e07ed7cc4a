"""Replay's per-line events of an engine log: which records make one, and with which fields.

A stats or SpecDecoding line is an event of its own in replay's output, and so is a start-up
line that makes no ``startup`` event (``QUIET``: one per route, …); crash lines are not (their
event is the incident). Pure, and light on purpose: the scan workers render these fields next
to the parse, and the replay forks them as soon as this and the parsers are imported, before
the rest of the derivations (``log.engine_line_event`` builds the whole event from these).
"""

from __future__ import annotations

from typing import Any

from inferwatch.derive.engine.spec import line_mal
from inferwatch.parsers.engine_records import EngineRecord, EngineStats, SpecDecode, StartupFact

QUIET = frozenset({
    "route", "routes_header", "prometheus_multiproc_dir", "server_process_started",
    "waiting_app_startup", "chat_template_warmup", "supported_tasks", "engine_waiting_frontend",
})  # fmt: skip
"""Start-up facts that make no ``startup`` event (``startup.EnginePhase``): a line event each."""
_LINE_EVENT_TYPES = (EngineStats, SpecDecode, StartupFact)  # made once: the workers ask per hit


def record_fields(record: EngineRecord) -> dict[str, Any]:
    """The record's corpus fields (shared/corpus/README.md) without its prefix."""
    return record.to_dict(prefix=False)


def line_event_fields(record: EngineRecord) -> dict[str, Any] | None:
    """The fields of ``log.engine_line_event`` after ``engine`` (the record's own, ``type``
    aside), or None for a record without a line event."""
    if not isinstance(record, _LINE_EVENT_TYPES):
        return None
    if isinstance(record, StartupFact) and record.event not in QUIET:
        return None  # the deriver's own startup event reports it
    fields = record_fields(record)
    del fields["type"]
    if isinstance(record, SpecDecode):
        fields["mal"] = line_mal(record)  # the parser reports what is printed; V0's is derived
    return fields
