"""Replay's JSON lines: a line event rendered in a scan worker (its fields as JSON, the rest
added by the writer) is byte for byte the event the writer renders from the record."""

from __future__ import annotations

import io
from datetime import UTC
from pathlib import Path

import pytest

from inferwatch.derive.engine.log import engine_line_event
from inferwatch.parsers.engine import parse_engine_line
from inferwatch.replay.output import Writer, fields_json

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _lines() -> list[str]:
    lines = (FIXTURES / "corpus" / "engine-lines.txt").read_text(encoding="utf-8").splitlines()
    for name in ("constructed_content_change.log", "constructed_stack_regression.log"):
        text = (FIXTURES / "engine" / name).read_text(encoding="utf-8")
        lines += [line for line in text.splitlines() if not line.startswith("#")]
    return lines


@pytest.mark.parametrize(("source", "engine"), [("logs/vllm.log", "vllm"), ('a "b"\\ü', "é\t")])
def test_worker_rendered_events_equal_writer_rendered_ones(source: str, engine: str) -> None:
    rendered = 0
    for number, line in enumerate(_lines(), start=1):
        record = parse_engine_line(line)
        if record is None:
            continue
        event = engine_line_event(record, engine=engine, source=source, line=number)
        fields = fields_json(record)
        assert (event is None) == (fields is None)
        if event is None or fields is None:
            continue
        by_doc, by_fields = io.StringIO(), io.StringIO()
        at = 1_700_000_000.0 + number
        doc_writer, fields_writer = Writer(by_doc, "jsonl", UTC), Writer(by_fields, "jsonl", UTC)
        doc_writer.event_doc(at, event)
        fields_writer.event_fields_json(at, record.type, source, number, engine, fields)
        doc_writer.flush()
        fields_writer.flush()
        assert by_doc.getvalue().startswith('{"kind": "event", "at": "20')
        assert by_fields.getvalue() == by_doc.getvalue()
        rendered += 1
    assert rendered > 100
