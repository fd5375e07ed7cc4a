"""The /metrics writer against prometheus_client's generate_latest: the same bytes, cheaper."""

from __future__ import annotations

import math
import subprocess
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric

from conftest import require_tool
from inferwatch.clock import FakeClock
from inferwatch.event import Kind
from inferwatch.export.collector import StoreCollector
from inferwatch.export.exposition import Exposition, render
from inferwatch.export.server import build_registry
from inferwatch.labels import make_labels
from inferwatch.store.histogram import describe_histogram, observe
from inferwatch.store.tsdb import SeriesStore

ODD_VALUES = (
    0.0, -0.0, 1.0, -2.5, 0.1, 1e-7, 5e-324, 123456.0, 1234567.0, 123456789.0, 1e20, 1.5e300,
    -123456789.0, math.inf, -math.inf, math.nan,
)  # fmt: skip


def _rich_store(*, lint_clean: bool = False) -> tuple[SeriesStore, FakeClock]:
    """Every kind of series the store exports; ``lint_clean`` leaves out what today's
    exposition writes but promtool's linter frowns on (a counter without ``_total``, whose
    samples keep their name, and a name that ends in a type)."""
    clock = FakeClock(10_000.0)
    store = SeriesStore(clock)
    store.describe("inferwatch_gpu_temperature_celsius", Kind.GAUGE, "GPU core temperature.")
    store.describe(
        "inferwatch_odd", Kind.GAUGE, 'Help with a \\ backslash,\na newline and "quotes".'
    )
    store.describe("inferwatch_xid_errors_total", Kind.COUNTER, "Xid errors.")
    store.describe("inferwatch_restarts", Kind.COUNTER, "A counter without the suffix.")
    for gpu in range(8):
        labels = make_labels({"gpu": str(gpu), "uuid": f"GPU-{gpu:04d}", "bus_id": f"0:{gpu}"})
        store.set("inferwatch_gpu_temperature_celsius", labels, 40.0 + gpu * 1.25)
    for i, value in enumerate(ODD_VALUES):
        store.set("inferwatch_odd", make_labels({"i": str(i)}), value)
    escaped = make_labels(
        {"path": "C:\\logs\\a.log", "quote": 'say "hi"', "multi": "one\ntwo", "utf8": "GPU→ü"}
    )
    store.set("inferwatch_odd", escaped, 3.0)
    store.inc("inferwatch_xid_errors_total", make_labels({"xid": "79", "gpu": "3"}), 2.0)
    if not lint_clean:
        store.inc("inferwatch_restarts", make_labels({"engine": "vllm"}))
        store.set("undescribed_gauge", (), 7.0)
    store.set("undescribed_value", (), 7.0)  # no meta: the fallback help
    store.set("inferwatch_gone", make_labels({"gpu": "9"}), 1.0)
    store.mark_stale("inferwatch_gone", make_labels({"gpu": "9"}))  # stale marker: absent
    store.set("inferwatch_old", (), 1.0, t=10_000.0 - 3600)  # too old: absent
    describe_histogram(store, "inferwatch_latency_seconds", "Seconds \\ from queued to sent.")
    for receiver in ("phone", "pager"):
        for took in (0.04, 0.08, 3.0, 120.0):
            observe(
                store,
                "inferwatch_latency_seconds",
                make_labels({"receiver": receiver}),
                took,
                (0.05, 0.1, 1.0, 1e6),
            )
    return store, clock


def _reference(collector: StoreCollector) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return generate_latest(registry)


def test_the_store_renders_byte_for_byte_as_generate_latest() -> None:
    store, clock = _rich_store()
    collector = StoreCollector(store, clock)
    text = Exposition(collector).render()
    assert text == _reference(collector)
    body = text.decode()
    assert 'path="C:\\\\logs\\\\a.log"' in body
    assert 'quote="say \\"hi\\""' in body
    assert 'multi="one\\ntwo"' in body
    assert "# HELP inferwatch_odd Help with a \\\\ backslash,\\na newline" in body
    assert "NaN" in body and "+Inf" in body and "-Inf" in body and "1.23456789e+08" in body
    assert "inferwatch_gone" not in body and "inferwatch_old" not in body
    assert "# TYPE inferwatch_restarts_total counter" in body


def test_remembered_heads_follow_changes_in_the_store() -> None:
    store, clock = _rich_store()
    collector = StoreCollector(store, clock)
    exposition = Exposition(collector)
    exposition.render()
    store.set("inferwatch_gpu_temperature_celsius", make_labels({"gpu": "0"}), 99.0)
    store.mark_stale("inferwatch_odd", make_labels({"i": "0"}))
    clock.advance(5)
    assert exposition.render() == _reference(collector)


class _Fixed:
    """Families of every type generate_latest treats specially, with timestamps and odd names."""

    def collect(self) -> Iterator[Metric]:
        counter = Metric("jobs", "Jobs \\ done.", "counter")
        counter.add_sample("jobs_total", {"b": "2", "a": 'x"y'}, 3.0, timestamp=12.5)
        counter.add_sample("jobs_created", {"a": "1"}, 1.7e9)
        info = Metric("build", "Build.", "info")
        info.add_sample("build_info", {"version": "1.0"}, 1.0)
        state = Metric("mode", "Mode.", "stateset")
        state.add_sample("mode", {"mode": "on"}, 1.0)
        gh = Metric("queue", "Queue.", "gaugehistogram")
        gh.add_sample("queue_bucket", {"le": "+Inf"}, 4.0)
        gh.add_sample("queue_gcount", {}, 4.0)
        gh.add_sample("queue_gsum", {}, 2.0)
        unknown = Metric("thing", "Thing.", "unknown")
        unknown.add_sample("thing", {"label-with-dash": "v"}, -0.0)
        return iter([counter, info, state, gh, unknown])


def test_other_collectors_render_as_generate_latest() -> None:
    fixed = _Fixed()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(fixed)  # type: ignore[arg-type]
    assert render(fixed) == generate_latest(registry)  # type: ignore[arg-type]


def test_the_metrics_body_passes_promtool() -> None:
    store, clock = _rich_store(lint_clean=True)
    text = render(build_registry(StoreCollector(store, clock)))
    assert b"# HELP inferwatch_odd" in text
    promtool = require_tool("promtool")
    done = subprocess.run(
        [promtool, "check", "metrics"], input=text, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
