from __future__ import annotations

from html.parser import HTMLParser

from inferwatch.export.page.report import ReportInputs, chart, render_report
from inferwatch.export.page.samples import Curve

EVIL = "<script>alert(1)</script>"
DECODE = "inferwatch_engine_decode_tokens_per_second"


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)


def inputs(**kw: object) -> ReportInputs:
    base: dict[str, object] = {
        "title": "r",
        "files": [f"/logs/{EVIL}.log"],
        "first": 1000.0,
        "last": 1600.0,
        "summary": {
            "verdict": f"step rate fell {EVIL}",
            "engines": [
                {
                    "engine": "e1",
                    "busy_periods": [
                        {"start": 1000.0, "end": 1100.0, "decode": 100.0, "verdict": "first"},
                        {"start": 1400.0, "end": 1600.0, "decode": 60.0, "verdict": "fell"},
                    ],
                }
            ],
        },
        "curves": [Curve({"__name__": DECODE, "engine": "e1"}, [(1000.0, 100.0), (1600.0, 60.0)])],
        "alerts": [
            {
                "state": "firing",
                "at_s": 1450.0,
                "labels": {"alertname": "EngineStepRateRegression", "severity": "warning"},
                "annotations": {"summary": EVIL, "action": "look", "action_zh": "查看"},
            },
            {
                "state": "resolved",
                "at_s": 1590.0,
                "labels": {"alertname": "EngineStepRateRegression", "severity": "warning"},
                "annotations": {},
            },
        ],
        "events": [
            {"at": 1500.0, "type": "fault_incident", "source": "k", "line": 3, "labels": {},
             "details": {"classification": "hardware-memory"}},
            {"at": 1400.0, "type": "xid", "source": "k", "line": 1, "labels": {"xid": EVIL},
             "details": {}},
        ],
    }  # fmt: skip
    base.update(kw)
    return ReportInputs(**base)  # type: ignore[arg-type]


def test_report_has_every_view_and_no_script() -> None:
    page = render_report(inputs())
    parsed = Tags()
    parsed.feed(page)
    assert "script" not in parsed.tags  # a file from disk: nothing runs, nothing loads
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    for ident in ("summary", "alerts", "engines", "incidents", "events"):
        assert f'id="{ident}"' in page
    assert page.count('class="busy"') == 2
    assert "resolved 1970-01-01 00:26:30 UTC" in page  # fired, then resolved
    assert "hardware-memory" in page


def test_report_in_chinese_uses_chinese_annotations() -> None:
    page = render_report(inputs(language="zh"))
    assert "查看" in page and "告警" in page


def test_chart_shades_busy_periods_over_the_span() -> None:
    svg = chart([(0.0, 0.0), (100.0, 10.0)], 0.0, 100.0, [(25.0, 50.0)], "x")
    assert '<rect class="busy" x="150.0" y="0" width="150.0"' in svg
    assert 'points="0.0,88.0 600.0,4.0"' in svg
    assert "max 10.00" in svg


def test_a_boot_relative_replay_never_shows_a_date_in_1970() -> None:
    page = render_report(inputs(boot_relative=True))
    assert "1970" not in page
    assert "boot +1450.000 s" in page and "boot +1500.000 s" in page  # alert, incident
