from __future__ import annotations

from typing import Any

from inferwatch.export.page.samples import Curve, Sample
from inferwatch.export.page.view import PageInputs, build_view


def alert(name: str, state: str, severity: str, at: float, **labels: str) -> dict[str, Any]:
    return {
        "labels": {"alertname": name, "severity": severity, **labels},
        "annotations": {"summary": f"{name} summary", "summary_zh": f"{name} 摘要"},
        "state": state,
        "activeAt": at,
        "firedAt": at if state == "firing" else None,
    }


ALERTS = [
    alert("Old", "resolved", "critical", 10.0),
    alert("Pend", "pending", "critical", 50.0),
    alert("Warn", "firing", "warning", 40.0, engine="e1"),
    alert("CritOld", "firing", "critical", 20.0, engine="e1"),
    alert("CritNew", "firing", "critical", 30.0, engine="e2"),
]


def test_firing_alerts_come_first_by_severity_then_newest() -> None:
    view = build_view(PageInputs(now=100.0, alerts=ALERTS))
    assert [(a.name, a.state) for a in view.alerts] == [
        ("CritNew", "firing"),
        ("CritOld", "firing"),
        ("Warn", "firing"),
        ("Pend", "pending"),
    ]
    assert view.alerts[0].labels == "engine=e2"
    assert view.alerts[0].summary == "CritNew summary"


def test_chinese_annotations_when_the_rule_has_them() -> None:
    view = build_view(PageInputs(now=100.0, alerts=ALERTS, language="zh"))
    assert view.alerts[0].summary == "CritNew 摘要"
    assert view.words["alerts"] == "告警"
    assert view.alerts[0].diagnosis == ""  # no diagnosis_zh and no diagnosis: nothing


def test_silences_say_what_they_mute_and_flag_files_only_while_present() -> None:
    silences = [
        {
            "id": "s1",
            "matchers": [{"name": "engine", "value": "e1", "isRegex": False, "isEqual": True}],
            "createdBy": "ops",
            "comment": "swap",
            "endsAt": 200.0,
            "status": {"state": "active"},
        },
        {"id": "gone", "matchers": [], "status": {"state": "expired"}},
    ]
    files = [
        {
            "id": "file:/run/maint",
            "path": "/run/maint",
            "matchers": [
                {"name": "alertname", "value": "Crit.*", "isRegex": True, "isEqual": True}
            ],
            "comment": "",
            "active": False,
        }
    ]
    status = {"notify": {"silence_files": files}}
    view = build_view(PageInputs(now=100.0, alerts=ALERTS, silences=silences, status=status))
    api, flag = view.silences
    assert api.matchers == '{engine="e1"}'
    assert sorted(api.mutes) == ["CritOld engine=e1", "Warn engine=e1"]
    assert flag.kind == "file" and not flag.active and flag.mutes == []
    assert {a.name: a.muted_by for a in view.alerts}["Warn"] == ('{engine="e1"}',)
    assert {a.name: a.muted_by for a in view.alerts}["CritNew"] == ()
    files[0]["active"] = True
    view = build_view(PageInputs(now=100.0, alerts=ALERTS, silences=silences, status=status))
    assert sorted(view.silences[1].mutes) == ["CritNew engine=e2", "CritOld engine=e1"]
    assert {a.name: a.muted_by for a in view.alerts}["CritOld"] == (
        '{engine="e1"}',
        '{alertname=~"Crit.*"}',
    )


def test_engines_gather_values_and_sparklines_by_engine() -> None:
    samples = [
        Sample({"__name__": "inferwatch_engine_decode_tokens_per_second", "engine": "e1"}, 97.84),
        Sample({"__name__": "inferwatch_engine_spec_acceptance_length", "engine": "e1"}, 2.8),
        Sample({"__name__": "inferwatch_engine_kv_cache_usage_ratio", "engine": "e1"}, 0.071),
        Sample({"__name__": "inferwatch_engine_requests_running", "engine": "e1"}, 3.0),
        Sample({"__name__": "inferwatch_gpu_power_watts", "gpu": "0"}, 200.0),
    ]
    curves = [
        Curve(
            {"__name__": "inferwatch_engine_steps_per_second", "engine": "e1", "dp_rank": "1"},
            [(0.0, 1.0), (60.0, 2.0)],
        )
    ]
    view = build_view(PageInputs(now=100.0, samples=samples, curves=curves))
    assert [e.name for e in view.engines] == ["e1", "e1 dp1"]
    e1 = view.engines[0]
    assert e1.values == {"decode": "97.8", "mal": "2.80", "kv": "7.1%", "running": "3"}
    assert view.engines[1].sparks == {"step_rate": [(0.0, 1.0), (60.0, 2.0)]}


def test_incidents_are_apart_from_other_events() -> None:
    events = [
        {
            "at": 90.0,
            "type": "fault_incident",
            "source": "kernel",
            "line": 7,
            "labels": {},
            "details": {"classification": "hardware-memory", "gpus": ["0000:03:00.0"]},
        },
        {"at": 80.0, "type": "xid", "source": "kernel", "labels": {"xid": "79"}, "details": {}},
    ]
    view = build_view(PageInputs(now=100.0, events=events))
    assert [i.type for i in view.incidents] == ["fault_incident"]
    assert "classification=hardware-memory" in view.incidents[0].text
    assert view.incidents[0].source == "kernel:7"
    assert [(e.type, e.text) for e in view.events] == [("xid", "xid=79")]


def test_sources_outbox_and_problems() -> None:
    status = {
        "sources": {
            "kernel": {"state": "down", "reason": "", "last_error": "permission denied"},
            "gpus": {"state": "up", "reason": ""},
        },
        "disabled": ["engine:x (off)"],
        "problems": ["outbox unwritable"],
        "rules": {"problems": ["rules/x.yaml:3: bad"]},
        "notify": {
            "outbox_pending": 4,
            "outbox_oldest_pending_at": 0.0,
            "last_attempts": {
                "ops/webhook": {"at": 50.0, "outcome": "permanent", "reason": "401"},
            },
        },
    }
    view = build_view(PageInputs(now=100.0, status=status))
    assert [(s.name, s.state, s.reason, s.ok) for s in view.sources] == [
        ("gpus", "up", "", True),
        ("kernel", "down", "permission denied", False),
        ("engine:x (off)", "disabled", "", True),
    ]
    assert view.pending == 4 and view.oldest == "1970-01-01 00:00:00 UTC"
    assert [(a.integration, a.ok, a.reason) for a in view.attempts] == [
        ("ops/webhook", False, "401")
    ]
    assert view.problems == ["outbox unwritable", "rules/x.yaml:3: bad"]
