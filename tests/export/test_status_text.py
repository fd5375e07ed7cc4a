from __future__ import annotations

from inferwatch.export.status_text import event_line, status_lines

NOW = 1_790_000_000.0


def test_the_summary_puts_problems_and_live_alerts_before_sources() -> None:
    status = {
        "version": "1.2", "pid": 7, "started_at": NOW - 3725, "listen": "127.0.0.1:9945",
        "config": None, "state_dir": "/var/lib/inferwatch",
        "problems": ["config reload failed; running the previous config: c.yaml:2:1: x"],
        "sources": {"kernel": {"state": "error", "reason": "", "last_error": "EACCES"}},
        "disabled": ["gpus (gpus.backend: off)"],
        "rules": {"groups": 3, "files": ["a.yaml"], "problems": []},
        "notify": {"outbox_pending": 2, "outbox_oldest_pending_at": NOW - 60, "last_attempts": {}},
        "last_snapshot": None,
    }  # fmt: skip
    alerts = {
        "alerts": [
            {"state": "resolved", "labels": {"alertname": "Old"}},
            {"state": "pending", "labels": {"alertname": "Soon"}, "activeAt": NOW},
            {"state": "firing", "labels": {"alertname": "Xid", "gpu": "0"}, "firedAt": NOW,
             "annotations": {"summary": "GPU 0 Xid 79"}},
        ]
    }  # fmt: skip
    lines = status_lines(status, alerts, NOW)
    assert lines[0] == "inferwatch 1.2 (pid 7, up 1h2m5s) on 127.0.0.1:9945"
    assert lines[1] == "config: embedded defaults; state: /var/lib/inferwatch"
    assert lines[2:4] == [
        "problems: 1",
        "  ! config reload failed; running the previous config: c.yaml:2:1: x",
    ]
    assert lines[4:7] == [
        "alerts: 2",
        "  firing   Xid{gpu=0} since 2026-09-21 14:13:20 UTC: GPU 0 Xid 79",
        "  pending  Soon{} since 2026-09-21 14:13:20 UTC",
    ]
    assert "  kernel                       error     EACCES" in lines
    assert "  gpus (gpus.backend: off) (disabled)" in lines
    assert "outbox: 2 pending, oldest 2026-09-21 14:12:20 UTC" in lines
    assert lines[-1] == "last snapshot: never"


def test_an_event_line_says_when_what_where_and_the_details() -> None:
    row = {
        "at": NOW, "type": "xid", "labels": {"pci_bus_id": "0000:3b:00.0"},
        "details": {"xid": 79, "name": "fallen off the bus", "mmu": {"gpc": 1}},
    }  # fmt: skip
    assert event_line(row) == (
        "2026-09-21 14:13:20 UTC  xid              pci_bus_id=0000:3b:00.0  "
        'name="fallen off the bus" xid=79'
    )
