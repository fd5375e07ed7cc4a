from __future__ import annotations

import datetime as dt
import io

from inferwatch.event import Event
from inferwatch.replay.recorder import RecordingWriter, seconds


def test_records_what_it_writes_and_writes_it_unchanged() -> None:
    out = io.StringIO()
    writer = RecordingWriter(out, "text", dt.UTC)
    writer.event(
        Event("xid", 100.0, "k.log", "key", 7, {"pci_bus_id": "0000:03:00.0"}, {"xid": 79})
    )
    writer.alert(
        {
            "at": writer.iso(160.5),
            "alertname": "A",
            "state": "firing",
            "labels": {},
            "annotations": {},
        }
    )
    writer.flush()
    assert "xid" in out.getvalue() and "ALERT FIRING" in out.getvalue()
    (event,) = writer.events
    assert event["at"] == 100.0 and event["line"] == 7
    assert event["labels"] == {"pci_bus_id": "0000:03:00.0"}
    assert event["details"]["xid"] == 79
    assert writer.alerts[0]["at_s"] == 160.5


def test_seconds_reads_both_time_forms_back() -> None:
    assert seconds("1970-01-01T00:01:40+00:00") == 100.0
    assert seconds("PT5400.120000S") == 5400.12
    assert seconds("garbage") is None
