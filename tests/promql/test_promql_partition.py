"""promql.partition: which labels an expression keeps apart, and evaluating within one partition
(promql.index.Within) giving exactly that partition's part of the whole result, for every
shipped alerting rule over a store of several GPUs and engines."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from conftest import REPO
from inferwatch.clock import FakeClock
from inferwatch.labels import Labels, MatchOp, make_labels
from inferwatch.promql.ast import LabelMatcher, MatrixSelector, VectorSelector, selectors
from inferwatch.promql.context import Ctx
from inferwatch.promql.engine import DEFAULT_OPTIONS, PromQLError, Sample, load
from inferwatch.promql.index import SelectionCache, Within
from inferwatch.promql.partition import EVERY, NOTHING, Part, partition_labels, within
from inferwatch.rules.loader import load_rule_files
from inferwatch.rules.partial import partition_of
from inferwatch.rules.ruleset import AlertingRule
from inferwatch.store.tsdb import SeriesStore

BUS = frozenset({"job", "instance", "pci_bus_id"})


@pytest.mark.parametrize(
    ("expr", "part"),
    [
        ("x", EVERY),
        ('increase(x{xid="79"}[5m]) > 0', EVERY),
        ("time() - last_over_time(x[1h]) > 3", EVERY),
        ("x unless x offset 5m", EVERY),
        ("x * on(job, instance, pci_bus_id) group_left(gpu) info", Part(BUS)),
        ("x * ignoring(xid) group_left(gpu) info", Part(frozenset({"xid", "gpu"}), every=True)),
        ("x / ignoring(le) y", Part(frozenset({"le"}), every=True)),
        ("x and on() y", NOTHING),
        ("sum(x)", NOTHING),
        ("sum by (engine) (x)", Part(frozenset({"engine"}))),
        ("max without (reason) (x)", Part(frozenset({"reason"}), every=True)),
        ('count_values("v", x)', NOTHING),
        ('count_values without (a) ("v", x)', Part(frozenset({"a", "v"}), every=True)),
        (
            'label_replace(x, "bus", "$1", "pci_bus_id", "(.*)")',
            Part(frozenset({"bus"}), every=True),
        ),
        ("histogram_quantile(0.9, rate(h[5m]))", Part(frozenset({"le"}), every=True)),
        ("x > scalar(sum(y))", NOTHING),
        ("x > 2 * 3", EVERY),
        ("absent(x)", NOTHING),
        ("absent_over_time(x[5m])", NOTHING),
        ("vector(1)", NOTHING),
        ("hour()", NOTHING),
        ("hour(x)", EVERY),
        ("topk by (engine) (1, x)", Part(frozenset({"engine"}))),
        ("topk(scalar(y), x)", NOTHING),
    ],
)
def test_what_an_expression_keeps_apart(expr: str, part: Part) -> None:
    assert partition_labels(load(expr).ast) == part


def test_a_partition_is_the_series_values_of_its_labels() -> None:
    labels = make_labels({"pci_bus_id": "0000:01:00.0", "xid": "79"})
    assert Part(BUS).pairs(labels) == (
        ("instance", ""),
        ("job", ""),
        ("pci_bus_id", "0000:01:00.0"),
    )
    assert Part(frozenset({"xid"}), every=True).pairs(labels) == (("pci_bus_id", "0000:01:00.0"),)
    assert NOTHING.pairs(labels) is None
    assert Part(frozenset({"__name__"})).pairs(labels) is None
    assert within((("pci_bus_id", "0000:01:00.0"), ("job", "")), labels)
    assert not within((("pci_bus_id", "0000:02:00.0"),), labels)


# -- every shipped alerting rule, whole and by partition -----------------------------------------

T = 3 * 86400.0  # evaluation time: three days of history behind it
BUSES = ("0000:01:00.0", "0000:41:00.0", "0000:81:00.0")
ENGINES = ("e0", "e1", "e2")
VALUES = ("hardware-bus", "hw_slowdown", "software-oob-all-ranks", "memory", "full", "79", "31")
VALUES += ("finished", "failed", "kernel", "sm", "webhook")


def _value_for(matchers: list[tuple[MatchOp, str]]) -> str | None:
    """A label value that every matcher on one label accepts (None: none of ours does)."""
    for value in (*VALUES, "1", "x", ""):
        if all(LabelMatcher.of("l", op, want).matches(value) for op, want in matchers):
            return value
    return None


def _fill(store: SeriesStore, sel: VectorSelector, rng: random.Random) -> None:
    """Series the selector matches, one per GPU and engine, with a history: counters that step
    up now and then (some within the last minutes), gauges that wander."""
    if sel.name is None:
        return
    by_label: dict[str, list[tuple[MatchOp, str]]] = {}
    for m in sel.matchers:
        by_label.setdefault(m.name, []).append((m.op, m.value))
    fixed: dict[str, str] = {}
    for name, matchers in by_label.items():
        value = _value_for(matchers)
        if value is None:
            return
        if value:
            fixed[name] = value
    counter = sel.name.endswith("_total")
    for k in range(3):
        labels: dict[str, str] = {"pci_bus_id": BUSES[k], "engine": ENGINES[k], "gpu": str(k)}
        labels.update(fixed)
        key = make_labels(labels)
        if store.get(sel.name, key) is not None:
            continue
        value, t = float(rng.randint(0, 3)), T - 2 * 86400.0 - rng.uniform(0, 3600)
        while t <= T:
            if counter:
                value += 1.0 if rng.random() < 0.05 + 0.3 * (k == 1) else 0.0
                store.set_counter(sel.name, key, value, t)
            else:
                value = rng.choice((0.0, 1.0, 2.0, 16.0, 150.0, 0.5 * k + rng.random()))
                store.set(sel.name, key, value, t)
            t += rng.choice((10.0, 30.0, 600.0)) if t < T - 3600 else 10.0


def _shipped() -> list[AlertingRule]:
    rule_set, problems = load_rule_files(sorted(Path(REPO / "rules").glob("*.yaml")))
    assert problems == []
    return [r for g in rule_set.groups for r in g.rules if isinstance(r, AlertingRule)]


def _key(s: Sample) -> tuple[str, Labels, float]:
    return (s.name, s.labels, s.value)


@pytest.mark.parametrize("seed", range(3))
def test_every_shipped_rule_gives_each_partition_its_part_of_the_whole(seed: int) -> None:
    rng = random.Random(seed)
    rules = [r for r in _shipped() if partition_of(r) != NOTHING]
    assert len(rules) > 25
    store = SeriesStore(FakeClock(T), retention_s=math.inf)
    for rule in rules:
        for found in selectors(rule.query.ast):
            _fill(store, found.selector if isinstance(found, MatrixSelector) else found, rng)
    cache = SelectionCache()
    non_empty = covered = 0
    for rule in rules:
        run = rule.query.runner(DEFAULT_OPTIONS)
        try:
            whole = run(Ctx(store, T, DEFAULT_OPTIONS, cache))
        except PromQLError:  # labels our store lacks made match groups collide
            continue
        assert isinstance(whole, list)
        non_empty += bool(whole)
        part = partition_of(rule)
        seen: set[tuple[tuple[str, str], ...]] = set()
        for found in selectors(rule.query.ast):
            sel = found.selector if isinstance(found, MatrixSelector) else found
            for series in cache.series(store, sel):
                pairs = part.pairs(series.labels)
                if pairs is None or pairs in seen:
                    continue
                seen.add(pairs)
                narrow = run(Ctx(store, T, DEFAULT_OPTIONS, Within(cache, pairs)))
                assert isinstance(narrow, list)
                expected = sorted(_key(s) for s in whole if within(pairs, s.labels))
                assert sorted(map(_key, narrow)) == expected, (rule.name, pairs)
        covered += bool(seen)
    assert covered >= 25  # rules whose selectors our store could fill
    assert non_empty >= 10  # the comparison saw results, not only empty vectors


def test_a_partition_reads_only_its_own_series() -> None:
    store = SeriesStore(FakeClock(100.0), retention_s=math.inf)
    for k in range(500):
        labels = make_labels({"pci_bus_id": f"0000:{k:04x}:00.0", "xid": "79"})
        store.set_counter("xid_total", labels, 1.0, 0.0)
        store.set_counter("xid_total", labels, 1.0 + (k == 7), 90.0)
    query = load('increase(xid_total{xid="79"}[5m]) > 0 or (xid_total unless xid_total offset 5m)')
    cache = SelectionCache()
    narrow = Within(cache, (("instance", ""), ("job", ""), ("pci_bus_id", "0000:0007:00.0")))
    found = query.runner(DEFAULT_OPTIONS)(Ctx(store, 100.0, DEFAULT_OPTIONS, narrow))
    assert isinstance(found, list)
    assert [dict(s.labels)["pci_bus_id"] for s in found] == ["0000:0007:00.0"]
    assert narrow.read <= 3  # the partition's one series, once per selector


@pytest.mark.parametrize(
    "text",
    [
        'xid_total{xid="79"}',
        "xid_total",
        'xid_total{pci_bus_id=~"0000:00(0[0-9]).*"}',
        '{__name__=~"xid_total|gpu_up", xid!="31"}',
        "gpu_up",
        "missing",
    ],
)
def test_a_partition_selects_what_filtering_the_whole_selection_would(text: str) -> None:
    """Within (through the family index, or the whole selection for a selector without a
    metric name) against the whole selection filtered by the partition's pairs, while the
    store grows between selections; a pair with an empty value asks for the label's absence."""
    rng = random.Random(text)
    store = SeriesStore(FakeClock(0.0), retention_s=math.inf)
    cache = SelectionCache()
    sel = load(text).ast
    assert isinstance(sel, VectorSelector)
    for _ in range(4):
        for _ in range(30):
            k = rng.randrange(12)
            labels = {"pci_bus_id": f"0000:{k:04x}:00.0", "xid": rng.choice(("79", "31"))}
            if rng.random() < 0.3:
                labels["job"] = "node"
            store.set(rng.choice(("xid_total", "gpu_up")), make_labels(labels), 1.0, 0.0)
        for k in range(12):
            for job in ("", "node"):
                pairs = (("job", job), ("pci_bus_id", f"0000:{k:04x}:00.0"))
                narrow = Within(cache, pairs).series(store, sel)
                whole = [s for s in cache.series(store, sel) if within(pairs, s.labels)]
                assert narrow == whole, (pairs, text)
