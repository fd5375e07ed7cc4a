from __future__ import annotations

import re
import subprocess

from prometheus_client import generate_latest

from conftest import require_tool
from inferwatch.clock import FakeClock
from inferwatch.event import Kind
from inferwatch.export.collector import StoreCollector
from inferwatch.export.server import build_registry
from inferwatch.labels import make_labels
from inferwatch.store.histogram import describe_histogram, observe
from inferwatch.store.tsdb import SeriesStore


def render(store: SeriesStore, clock: FakeClock) -> str:
    return generate_latest(build_registry(StoreCollector(store, clock))).decode()


def test_families_are_built_fresh_and_stale_series_vanish() -> None:
    clock = FakeClock(1000.0)
    store = SeriesStore(clock)
    store.describe("inferwatch_gpu_temperature_celsius", Kind.GAUGE, "GPU core temperature.")
    store.describe("inferwatch_xid_errors_total", Kind.COUNTER, "Xid errors.")
    store.set("inferwatch_gpu_temperature_celsius", make_labels({"gpu": "0"}), 61.0)
    store.set("inferwatch_gpu_temperature_celsius", make_labels({"gpu": "1"}), 58.0)
    store.inc("inferwatch_xid_errors_total", make_labels({"xid": "31"}))
    text = render(store, clock)
    assert "# TYPE inferwatch_gpu_temperature_celsius gauge" in text
    assert 'inferwatch_gpu_temperature_celsius{gpu="0"} 61.0' in text
    assert re.search(r"^# TYPE inferwatch_xid_errors(_total)? counter$", text, re.M)
    assert 'inferwatch_xid_errors_total{xid="31"} 1.0' in text

    clock.advance(200)
    store.set("inferwatch_gpu_temperature_celsius", make_labels({"gpu": "1"}), 59.0)
    clock.advance(150)  # gpu 0 unseen for 350 s: stale; gpu 1 seen 150 s ago
    store.tick()
    text = render(store, clock)
    assert 'gpu="0"' not in text
    assert 'inferwatch_gpu_temperature_celsius{gpu="1"} 59.0' in text
    assert 'inferwatch_xid_errors_total{xid="31"} 1.0' in text  # event counters carry forward


def test_family_without_live_series_is_omitted() -> None:
    clock = FakeClock()
    store = SeriesStore(clock)
    store.describe("g", Kind.GAUGE, "x")
    store.set("g", (), 1.0)
    store.mark_stale("g", ())
    assert "# TYPE g " not in render(store, clock)


def test_a_histogram_is_one_family_that_promtool_accepts() -> None:

    clock = FakeClock(1000.0)
    store = SeriesStore(clock)
    name = "inferwatch_notification_latency_seconds"
    describe_histogram(store, name, "Seconds from queued to delivered.")
    where = make_labels({"receiver": "phone", "integration": "wecom"})
    for took in (0.04, 0.08, 3.0):
        observe(store, name, where, took, (0.05, 0.1, 1.0))
    text = render(store, clock)
    assert f"# TYPE {name} histogram" in text
    assert text.count("# TYPE inferwatch_notification_latency") == 1
    bucket = f'{name}_bucket{{integration="wecom",le="%s",receiver="phone"}} %s'
    for le, count in (("0.05", "1.0"), ("0.1", "2.0"), ("1.0", "2.0"), ("+Inf", "3.0")):
        assert bucket % (le, count) in text
    assert f'{name}_count{{integration="wecom",receiver="phone"}} 3.0' in text
    assert f'{name}_sum{{integration="wecom",receiver="phone"}} 3.12' in text
    promtool = require_tool("promtool")
    done = subprocess.run([promtool, "check", "metrics"], input=text.encode(),
                          capture_output=True, timeout=60)  # fmt: skip
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr
