"""An error repeated on every record is logged once, then as a count at most every interval."""

from __future__ import annotations

from structlog.testing import capture_logs

from inferwatch.pipeline.repeats import Repeats


def test_first_logged_with_its_traceback_then_counted() -> None:
    now = [0.0]
    repeats = Repeats(lambda: now[0], interval=300)
    try:
        raise ValueError("bad body")
    except ValueError as exc:
        error = exc
    with capture_logs() as logs:
        for i in range(1000):
            now[0] = i * 1.0  # one a second for 1000 s
            repeats.note("scrape:a", "bad", error if i == 0 else None, source="a")
        repeats.note("scrape:b", "bad", source="b")
    firsts = [x for x in logs if x["event"].endswith("(repeats are counted, not logged)")]
    assert [x["source"] for x in firsts] == ["a", "b"]
    assert "ValueError: bad body" in firsts[0]["traceback"]
    counts = [x["count"] for x in logs if x["event"] == "bad (repeated)"]
    assert counts == [300, 300, 300]  # at 300 s, 600 s and 900 s
    assert repeats.totals == {"scrape:a": 1000, "scrape:b": 1}
