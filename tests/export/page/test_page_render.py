from __future__ import annotations

import re
from html.parser import HTMLParser

from inferwatch.export.page.render import render_document, render_main, sparkline
from inferwatch.export.page.samples import Sample
from inferwatch.export.page.view import PageInputs, build_view

EVIL = "<script>alert(1)</script>"


class Texts(HTMLParser):
    """Collects the document's tags and text, to check what a browser would see."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def evil_inputs() -> PageInputs:
    return PageInputs(
        now=100.0,
        alerts=[
            {
                "labels": {"alertname": EVIL, "severity": "critical", "pod": f'x"{EVIL}'},
                "annotations": {"summary": EVIL, "diagnosis": EVIL, "action": EVIL},
                "state": "firing",
                "activeAt": 1.0,
                "firedAt": 1.0,
            }
        ],
        events=[{"at": 1.0, "type": EVIL, "source": EVIL, "labels": {"a": EVIL}, "details": {}}],
        status={
            "sources": {EVIL: {"state": EVIL, "reason": EVIL}},
            "problems": [EVIL],
            "notify": {"last_attempts": {EVIL: {"outcome": EVIL, "reason": EVIL}}},
        },
        samples=[Sample({"__name__": "inferwatch_gpu_power_watts", "gpu": EVIL}, 1.0)],
        links=[(EVIL, 'javascript:"><script>x()</script>')],
    )


def test_text_from_logs_and_labels_renders_as_text() -> None:
    view = build_view(evil_inputs())
    page = render_document(view, title=EVIL, main=render_main(view), refresh=True)
    parsed = Texts()
    parsed.feed(page)
    assert parsed.tags.count("script") == 1  # the page's own refresh script only
    assert "<script>alert" not in page
    assert sum(EVIL in t for t in parsed.text) >= 10  # shown, as text
    assert '"><script>' not in page


def test_the_document_loads_nothing_from_elsewhere() -> None:
    view = build_view(PageInputs(now=100.0))
    page = render_document(view, title="t", main=render_main(view), refresh=True)
    assert not re.search(r"(src|href)=[\"']?(https?:)?//", page)
    assert "@import" not in page and "url(" not in page
    assert '<meta name="viewport"' in page


def test_every_section_is_there_with_its_placeholder() -> None:
    view = build_view(PageInputs(now=100.0, language="zh"))
    main = render_main(view)
    for ident in ("alerts", "silences", "engines", "gpus", "incidents", "events", "downloads"):
        assert f'<section id="{ident}">' in main
    assert "当前没有触发或待定的告警" in main and "没有 GPU 读数" in main
    assert '<html lang="zh-CN">' in render_document(view, title="t", main=main, refresh=False)


def test_sparkline_scales_into_its_box_and_skips_nan() -> None:
    svg = sparkline([(0.0, 1.0), (30.0, float("nan")), (60.0, 3.0)], "x")
    assert 'points="0.0,26.0 120.0,2.0"' in svg
    assert sparkline([]) == "" and sparkline([(0.0, float("nan"))]) == ""
