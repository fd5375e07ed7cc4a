"""The dashboards against the demo: every metric name they draw is on the demo's /metrics within
25 s of its start, every family there is on a panel, and every panel's expression (variables
substituted) returns data from a real Prometheus that scraped the demo for a minute."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import wait_until
from grafana.dashboard_json import expressions, families, load, variables
from integration.promstack import get_json, stack, start_demo, start_prometheus

pytestmark = pytest.mark.integration

BOARDS = ("inferwatch-host.json", "inferwatch-fleet.json")

# Families whose panels exist but whose exporters land on main with other issues' branches
# (services and probes, canary, downloads, host memory). The integrator empties this list once
# they are merged; until then their panels may be empty and their names absent from the demo.
PENDING_FAMILIES: set[str] = set()

# Families on the demo's /metrics that no panel draws, and why.
_RECORDED = (
    "inferwatch's own recording-rule output (rules/engine.yaml, evaluated every 30 s, so not "
    "within 25 s); the fleet dashboard draws Prometheus's copy under its prom: name"
)
NOT_ON_A_PANEL: dict[str, str] = {
    "inferwatch_engine:decode_tokens_per_second:decode_bound": _RECORDED,
    "inferwatch_engine:steps_per_second:single_stream": _RECORDED,
}

# Panel expressions that may be empty on the demo, and why.
EXPECTED_EMPTY: dict[str, str] = {}

SUBSTITUTE = {
    "$host": "demo",
    "$gpu": ".*",  # All
    "$engine": ".*",  # All
    "$__rate_interval": "1m",
    "$__interval": "15s",
}


def substitute(expr: str) -> str:
    for var, value in SUBSTITUTE.items():
        expr = expr.replace(var, value)
    assert "$" not in expr, expr
    return expr


def demo_families(port: int) -> set[str]:
    try:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5, trust_env=False).text
    except httpx.HTTPError:
        return set()
    out = set()
    for family in text_string_to_metric_families(text):
        out.update({s.name for s in family.samples} if family.type == "counter" else {family.name})
    return out


def label_values_query(query: str) -> str:
    """``label_values(SELECTOR, LABEL)`` as a PromQL query returning one series per value."""
    m = re.fullmatch(r"label_values\((.+), (\w+)\)", query)
    assert m, query
    return f"count by ({m.group(2)}) ({m.group(1)})"


def test_dashboards_draw_the_demos_metrics_through_prometheus(tmp_path: Path) -> None:
    drawn: set[str] = set()
    queries: list[tuple[str, str]] = []
    for board in BOARDS:
        doc = load(board)
        for where, expr in expressions(doc):
            drawn |= families(expr)
            queries.append((f"{board}: {where}", substitute(expr)))
        for name, var in variables(doc).items():
            if var["type"] == "query":
                queries.append(
                    (f"{board}: variable {name}", substitute(label_values_query(var["query"])))
                )

    with stack(tmp_path) as s:
        started = time.monotonic()
        demo = start_demo(s)
        prom = start_prometheus(s, [(f"127.0.0.1:{demo}", {"host": "demo", "instance": "demo"})])
        scraping_since = time.time()

        needed = drawn - PENDING_FAMILIES
        seen: set[str] = set()

        def all_there() -> bool:
            seen.update(demo_families(demo))
            return needed <= seen or time.monotonic() - started > 25

        wait_until(all_there, 40, "the demo's families")
        assert sorted(needed - seen) == [], "drawn but not on the demo's /metrics within 25 s"
        assert not drawn & PENDING_FAMILIES & seen, "exported now: remove from PENDING_FAMILIES"

        wait_until(lambda: time.time() - scraping_since >= 60, 90, "a minute of scrapes")
        on_metrics = demo_families(demo)
        undrawn = on_metrics - drawn - set(NOT_ON_A_PANEL)
        assert sorted(undrawn) == [], "on the demo's /metrics but on no panel"

        empty = []
        for where, expr in queries:
            if families(expr) & PENDING_FAMILIES or expr in EXPECTED_EMPTY:
                continue
            doc = get_json(
                f"{prom}/api/v1/query_range", query=expr, start=str(scraping_since),
                end=str(time.time()), step="2",
            )  # fmt: skip
            assert doc and doc["status"] == "success", f"{where}: {expr}: {doc}"
            if not doc["data"]["result"]:
                empty.append(f"{where}: {expr}")
        assert empty == []
