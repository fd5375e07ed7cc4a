"""Phone-sized message rendering: content, languages, styles and byte-safe truncation."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from inferwatch.configfile import parse_config
from inferwatch.notify.message import (
    duration_text,
    fit,
    links_of,
    render,
    size,
    title_of,
    top_severity,
)

FIRING: dict[str, Any] = {
    "status": "firing",
    "labels": {"alertname": "EngineDown", "severity": "critical", "host": "gpu-a",
               "engine": "main", "gpu": "0"},
    "annotations": {"summary": "Engine main crashed", "diagnosis": "illegal memory access",
                    "action": "restart the engine"},
    "startsAt": "2026-01-01T02:00:07Z",
    "endsAt": "0001-01-01T00:00:00Z",
}  # fmt: skip
RESOLVED: dict[str, Any] = {
    "status": "resolved",
    "labels": {"alertname": "DecodeSlow", "severity": "warning", "host": "gpu-a"},
    "annotations": {"summary": "decode slow"},
    "startsAt": "2026-01-01T02:00:00Z",
    "endsAt": "2026-01-01T03:05:09Z",
}


def test_firing_block_has_every_part_and_title_has_severity_name_host() -> None:
    msg = render({"alerts": [RESOLVED, FIRING]})
    assert msg.title == "[CRITICAL] EngineDown @ gpu-a (+1)"
    assert msg.severity == "critical" and not msg.resolved
    first, second = msg.body.split("\n\n")
    assert first.splitlines() == [
        "[CRITICAL] EngineDown",
        "Host: gpu-a",
        "Engine main crashed",
        "Why: illegal memory access",
        "Do: restart the engine",
        "engine=main gpu=0",
        "Since 2026-01-01 02:00:07 UTC",
    ]
    assert second.splitlines()[0] == "[RESOLVED] DecodeSlow"
    assert second.splitlines()[-1] == "Resolved after 1h 5m 9s"


def test_chinese_and_resolved_group() -> None:
    msg = render({"alerts": [RESOLVED]}, language="zh")
    assert msg.resolved and msg.severity == "resolved"
    assert msg.title == "[已恢复] DecodeSlow @ gpu-a"
    assert "已恢复，持续 1 小时 5 分钟 9 秒" in msg.body and "主机：gpu-a" in msg.body
    assert top_severity({"alerts": []}) == "resolved"
    assert title_of({"alerts": []}) == "[RESOLVED] alert"


def test_chinese_uses_zh_annotations_and_falls_back_to_english() -> None:
    notes = {**FIRING["annotations"], "summary_zh": "引擎 main 崩溃", "action_zh": "重启引擎"}
    body = render({"alerts": [{**FIRING, "annotations": notes}]}, language="zh").body
    assert body.splitlines()[2:5] == [
        "引擎 main 崩溃",
        "诊断：illegal memory access",
        "处理：重启引擎",
    ]
    english = render({"alerts": [{**FIRING, "annotations": notes}]}).body
    assert "Engine main crashed" in english and "重启" not in english


def test_styles_markdown_and_html_escape() -> None:
    tricky = {**FIRING, "annotations": {"summary": "a < b & c > d"}}
    md = render({"alerts": [tricky]}, style="markdown")
    assert md.body.startswith("### **[CRITICAL] EngineDown**")
    h = render({"alerts": [tricky]}, style="html")
    assert h.body.startswith("<b>[CRITICAL] EngineDown</b>")
    assert "a &lt; b &amp; c &gt; d" in h.body


def test_blocks_that_do_not_fit_become_more_line() -> None:
    alerts = [{**FIRING, "labels": {**FIRING["labels"], "n": str(i)}} for i in range(20)]
    msg = render({"alerts": alerts, "truncatedAlerts": 3}, limit=600)
    assert size(msg.body) <= 600
    kept = msg.body.count("[CRITICAL]")
    assert msg.body.endswith(f"+{20 - kept + 3} more")


def test_oversized_first_block_is_cut_and_the_rest_still_counted() -> None:
    big = {**FIRING, "annotations": {"summary": "显存" * 2000}}
    msg = render({"alerts": [big, FIRING, FIRING]}, limit=1000)
    assert size(msg.body) <= 1000 and msg.body.endswith("…[cut]\n\n+2 more")


def test_oversized_single_block_is_cut_and_marked() -> None:
    big = {**FIRING, "annotations": {"summary": "显存" * 2000}}
    msg = render({"alerts": [big]}, language="zh", limit=4096)
    assert size(msg.body) <= 4096 and msg.body.endswith("…[已截断]")
    msg.body.encode("utf-8").decode("utf-8")  # still valid UTF-8
    h = render({"alerts": [{**big, "annotations": {"summary": "&" * 5000}}]}, style="html",
               limit=100, unit="chars")  # fmt: skip
    assert len(h.body) <= 100 and h.body.count("<b>") == h.body.count("</b>")
    assert not h.body.replace("&amp;", "").replace("…[cut]", "").endswith("&")


@given(st.text(), st.integers(min_value=0, max_value=64))
def test_fit_never_exceeds_limit_or_splits_code_points(text: str, limit: int) -> None:
    out = fit(text, limit)
    assert size(out) <= limit
    assert out == text or out.endswith("…") or out == "" or limit < 3
    assert fit(text, limit, "chars").__len__() <= limit


def test_duration_text() -> None:
    assert duration_text(0) == "0s" and duration_text(3725) == "1h 2m 5s"
    assert duration_text(61, "zh") == "1 分钟 1 秒"


def test_a_digest_keeps_its_lines_and_has_no_since_line() -> None:

    text = "Last 24 h on gpu-a\nBusy 9 h (yesterday 7 h)\nflash: decode 104 t/s (-3 %)"
    payload = {
        "alerts": [
            {
                "status": "firing",
                "labels": {"alertname": "InferwatchDigest", "severity": "info", "host": "gpu-a"},
                "annotations": {"summary": text.replace("\n", " | "), "description": text},
                "startsAt": "2026-11-30T08:00:00Z",
            }
        ]
    }
    body = render(payload).body
    assert body.splitlines()[-3:] == text.split("\n")
    assert "Since" not in body


def test_links_to_runbook_status_page_and_dashboard_close_the_message() -> None:

    config = parse_config(
        "external_url: http://gpu-a:9945/\ngrafana_url: http://gpu-a:3000/d/inferwatch\n", "c.yaml"
    )
    links = links_of(config)
    assert links == {"status": "http://gpu-a:9945/", "dashboard": "http://gpu-a:3000/d/inferwatch"}
    alert = {
        "status": "firing",
        "labels": {"alertname": "EngineCrashed", "severity": "critical"},
        "annotations": {"summary": "engine died", "runbook_url": "https://wiki/engine-crash"},
        "startsAt": "2026-11-30T08:00:00Z",
    }
    payload = {"alerts": [alert], "inferwatch": {"links": links}}
    text = render(payload).body.splitlines()[-1]
    assert text == (
        "Runbook: https://wiki/engine-crash · Status: http://gpu-a:9945/ · "
        "Dashboard: http://gpu-a:3000/d/inferwatch"
    )
    md = render(payload, style="markdown", language="zh").body.splitlines()[-1]
    assert md.startswith("[处理手册](https://wiki/engine-crash) · [状态页](http://gpu-a:9945/)")
    html = render(payload, style="html").body
    assert '<a href="http://gpu-a:3000/d/inferwatch">Dashboard</a>' in html
    small = render(payload, limit=300)  # links fit inside the limit, alerts come first
    assert len(small.body.encode()) <= 300 and "engine died" in small.body
    assert render({"alerts": [alert]}).body.splitlines()[-1].startswith("Runbook:")


def test_a_grouped_message_leads_with_what_is_new() -> None:
    """A re-sent group used to open with a 2-minute-old alert and show the new one third."""
    old = {**FIRING, "startsAt": "2026-01-01T02:00:07Z"}
    older = {**FIRING, "labels": {**FIRING["labels"], "alertname": "GpuHardwareXid"},
             "startsAt": "2026-01-01T01:58:00Z"}  # fmt: skip
    new = {**FIRING, "labels": {**FIRING["labels"], "alertname": "EngineStalled",
                                "severity": "warning"},
           "annotations": {"summary": "the new one"}, "startsAt": "2026-01-01T02:02:07Z"}  # fmt: skip
    payload = {"status": "firing", "alerts": [older, RESOLVED, old, new]}
    assert title_of(payload).startswith("[CRITICAL] EngineStalled")  # newest; tag = worst
    body = render(payload).body
    assert body.index("the new one") < body.index("Engine main crashed")
    assert body.index("Engine main crashed") < body.index("decode slow")  # resolved last
