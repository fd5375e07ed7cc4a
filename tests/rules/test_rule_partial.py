"""An event judged within its partition (rules.partial): a new Xid on one GPU of hundreds reads
that GPU's series, moves only that GPU's alerts, and ends where judging the whole rule ends."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest

from conftest import REPO
from inferwatch.alerts.model import AlertState, AlertTransition
from inferwatch.clock import FakeClock
from inferwatch.labels import Labels, make_labels
from inferwatch.promql import index as promql_index
from inferwatch.rules import partial as rules_partial
from inferwatch.rules import service as rules_service
from inferwatch.rules.evaluator import RuleManager
from inferwatch.rules.loader import load_rule_files, load_rule_text
from inferwatch.rules.ruleset import RuleSet
from inferwatch.rules.service import RuleService
from inferwatch.store.tsdb import SeriesStore

RULES = """
groups:
  - name: gpu
    rules:
      - alert: FellOff
        expr: |
          (increase(xid_total{xid="79"}[5m]) > 0 or (xid_total{xid="79"} unless xid_total{xid="79"} offset 5m))
          * on(job, instance, pci_bus_id) group_left(gpu) gpu_info
        labels: {severity: critical}
        annotations: {summary: "GPU {{ $labels.gpu }} fell off the bus"}
      - alert: Many
        expr: count(xid_total{xid="79"}) > 1000
"""
GPUS = 300


def bus(k: int) -> str:
    return f"0000:{k:04x}:00.0"


def xid(k: int) -> Labels:
    return make_labels({"pci_bus_id": bus(k), "xid": "79"})


def host(gpus: int = GPUS) -> tuple[SeriesStore, FakeClock]:
    """Every GPU known and seen with an old Xid 79 (counted from before: no increase)."""
    clock = FakeClock(0.0)
    store = SeriesStore(clock, retention_s=math.inf)
    for k in range(gpus):
        store.inc("xid_total", xid(k), 1.0, 0.0, wake=False)
    sample(store, 0.0)
    return store, clock


def sample(store: SeriesStore, t: float) -> None:
    """The GPU sampler's round: every GPU's info at ``t``; event counters carried forward."""
    for s in list(store.family("xid_total")):
        labels = make_labels({"pci_bus_id": dict(s.labels)["pci_bus_id"], "gpu": "g"})
        store.set("gpu_info", labels, 1.0, t)
    store.tick(t)


def manager(store: SeriesStore, text: str = RULES) -> RuleManager:
    groups, problems = load_rule_text(text, "r.yaml")
    assert problems == []
    return RuleManager(RuleSet(tuple(groups)), store, {})


def counting(monkeypatch: pytest.MonkeyPatch) -> list[promql_index.Within]:
    made: list[promql_index.Within] = []

    class Counted(promql_index.Within):
        def __init__(self, *args: object) -> None:
            super().__init__(*args)  # type: ignore[arg-type]
            made.append(self)

    monkeypatch.setattr(rules_partial, "Within", Counted)
    return made


def firing(m: RuleManager) -> dict[str, AlertState]:
    return {
        dict(a.labels).get("pci_bus_id", ""): a.state for a in m.alerts() if a.name == "FellOff"
    }


def xid_at(store: SeriesStore, clock: FakeClock, k: int, t: float) -> None:
    """A new Xid 79 on GPU ``k`` at ``t``, a sampler's round just before."""
    sample(store, t - 1.0)
    clock.set(t)
    store.inc("xid_total", xid(k), 1.0, t)


def test_a_new_xid_on_one_gpu_reads_that_gpu_and_fires_its_alert(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, clock = host()
    m = manager(store)
    service = RuleService(store, clock, [], external_labels={}, state_dir=None)
    service.manager = m
    store.on_change(service.on_change)
    got: list[AlertTransition] = []
    service.sink = got.extend
    clock.set(400.0)
    sample(store, 400.0)
    service.tick()  # a whole evaluation: nothing fires over the old counts
    assert firing(m) == {}
    made = counting(monkeypatch)
    xid_at(store, clock, 7, 410.0)  # no loop running: judged at once
    assert [(t.alert.name, t.to_state) for t in got] == [("FellOff", AlertState.FIRING)]
    assert firing(m) == {bus(7): AlertState.FIRING}
    assert len(made) == 1 and made[0].read <= 10  # one GPU's series, not 300 GPUs' (600+)
    # `Many` counts every GPU: it is judged whole, never within a partition
    (group,) = m.rule_set.groups
    assert m.partition(group, 1, "xid_total", xid(7)) is None


def test_judging_a_partition_ends_where_judging_the_whole_rule_ends() -> None:
    """The same events, judged within their partitions by one manager and whole by another:
    after each event the same alerts in the event's partition, and after each scheduled
    evaluation the same alerts everywhere (one out of the partition waits for it)."""
    outcomes = []
    for narrow in (True, False):
        store, clock = host(40)
        m = manager(store)
        (group,) = m.rule_set.groups
        states = []
        for t, k in ((400.0, 3), (410.0, 9), (700.0, 3), (1000.0, 12), (1001.0, 12)):
            xid_at(store, clock, k, t)
            pairs = m.partition(group, 0, "xid_total", xid(k))
            assert pairs is not None
            within = {0: frozenset({pairs})} if narrow else {}
            m.evaluate_rules(group, t, frozenset({0}), within)
            states.append(held(m, bus(k)))
            sample(store, t + 15.0)
            m.evaluate_due(t + 15.0)
            states.append(held(m))
        outcomes.append(states)
    assert outcomes[0] == outcomes[1]
    assert [a[:2] for a in outcomes[0][0]] == [(bus(3), AlertState.FIRING)]
    assert any(state == AlertState.RESOLVED for _, state, _ in outcomes[0][-1])


def held(m: RuleManager, only: str = "") -> list[tuple[str, AlertState, float]]:
    """Every alert held (or those of one GPU): its GPU, state and value."""
    found = ((dict(a.labels)["pci_bus_id"], a.state, a.value) for a in m.alerts(True))
    return sorted(a for a in found if not only or a[0] == only)


def test_a_partition_leaves_the_other_gpus_alerts_to_the_whole_evaluation() -> None:
    store, clock = host(20)
    m = manager(store)
    (group,) = m.rule_set.groups
    xid_at(store, clock, 2, 400.0)
    m.evaluate_due(400.0)
    assert firing(m) == {bus(2): AlertState.FIRING}
    # six minutes on, GPU 2's increase left the window; an Xid on GPU 5 is judged alone
    xid_at(store, clock, 5, 760.0)
    pairs = m.partition(group, 0, "xid_total", xid(5))
    assert pairs is not None
    m.evaluate_rules(group, 760.0, frozenset({0}), {0: frozenset({pairs})})
    assert firing(m) == {bus(2): AlertState.FIRING, bus(5): AlertState.FIRING}
    sample(store, 761.0)
    m.evaluate_due(761.0)  # the whole rule: GPU 2's alert resolves now
    assert [a[:2] for a in held(m)] == [(bus(2), AlertState.RESOLVED), (bus(5), AlertState.FIRING)]


def test_a_rule_that_failed_or_too_many_partitions_are_judged_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, clock = host(10)
    m = manager(store)
    (group,) = m.rule_set.groups
    made = counting(monkeypatch)
    parts = frozenset(
        p
        for k in range(rules_partial.MAX_PARTS + 1)
        if (p := m.partition(group, 0, "xid_total", xid(k)))
    )
    for k in range(rules_partial.MAX_PARTS + 1):
        xid_at(store, clock, k, 400.0)
    m.evaluate_rules(group, 400.0, frozenset({0}), {0: parts})
    assert made == []  # more partitions than MAX_PARTS: the whole rule
    assert len(firing(m)) == rules_partial.MAX_PARTS + 1
    # a rule whose last evaluation failed is judged whole until it succeeds again
    state = next(iter(m._states.values()))
    state.health = "err"
    xid_at(store, clock, 8, 410.0)
    pairs = m.partition(group, 0, "xid_total", xid(8))
    assert pairs is not None
    m.evaluate_rules(group, 410.0, frozenset({0}), {0: frozenset({pairs})})
    assert made == [] and state.health == "ok"
    assert bus(8) in firing(m)


def test_the_shipped_gpu_rules_page_a_fallen_gpu_from_its_partition(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rule_set, problems = load_rule_files([Path(REPO / "rules" / "gpu.yaml")])
    assert problems == []
    clock = FakeClock(0.0)
    store = SeriesStore(clock, retention_s=math.inf)
    labels = {k: make_labels({"pci_bus_id": bus(k), "xid": "79", "category": "hardware-bus"})
              for k in range(200)}  # fmt: skip
    for k in range(200):
        store.inc("inferwatch_xid_errors_total", labels[k], 1.0, 0.0, wake=False)
    m = RuleManager(rule_set, store, {})
    service = RuleService(store, clock, [], external_labels={}, state_dir=None)
    service.manager = m
    store.on_change(service.on_change)
    clock.set(400.0)
    service.tick()
    made = counting(monkeypatch)
    got: list[AlertTransition] = []
    service.sink = got.extend
    store.tick(400.5)
    clock.set(401.0)
    store.inc("inferwatch_xid_errors_total", labels[42], 1.0, 401.0)
    fired = sorted((t.alert.name, dict(t.alert.labels)["pci_bus_id"]) for t in got
                   if t.to_state is AlertState.FIRING)  # fmt: skip
    assert fired == [("GpuFallenOffBus", bus(42))]
    assert made and all(w.read < 20 for w in made)


TWO_GROUPS = """
groups:
  - name: first
    rules:
      - alert: FellOff
        expr: increase(xid_total{xid="79"}[5m]) > 0
  - name: second
    rules:
      - alert: Counted
        expr: count(increase(xid_total{xid="79"}[5m]) > 0) > 0
"""


def test_a_groups_alerts_go_out_before_the_next_group_reading_the_change_runs() -> None:
    """With the loop running, the next group waits until the task the first group's alert
    started (a notification on its way) has had its turns."""
    store, clock = host(10)
    service = RuleService(store, clock, [], external_labels={}, state_dir=None)
    service.manager = manager(store, TWO_GROUPS)
    store.on_change(service.on_change)
    order: list[str] = []

    async def send(name: str) -> None:
        for _ in range(3):  # a request takes a few loop turns to reach the network
            await asyncio.sleep(0)
        order.append(f"sent {name}")
        if len(tasks) == 2:
            done.set()

    def sink(transitions: list[AlertTransition]) -> None:
        for t in transitions:
            order.append(t.alert.name)
            tasks.append(asyncio.ensure_future(send(t.alert.name)))

    tasks: list[asyncio.Future[None]] = []
    service.sink = sink

    async def main() -> None:
        xid_at(store, clock, 4, 400.0)
        await asyncio.wait_for(done.wait(), 5.0)
        await asyncio.gather(*tasks)

    done = asyncio.Event()

    asyncio.run(main())
    assert order == ["FellOff", "sent FellOff", "Counted", "sent Counted"]


def test_a_wait_that_fails_still_lets_the_next_group_run() -> None:
    store, clock = host(10)
    service = RuleService(store, clock, [], external_labels={}, state_dir=None)
    service.manager = manager(store, TWO_GROUPS)
    store.on_change(service.on_change)
    order: list[str] = []
    done = asyncio.Event()

    def sink(transitions: list[AlertTransition]) -> None:
        order.extend(t.alert.name for t in transitions)
        if len(order) == 2:
            done.set()

    async def settle(_timeout: float) -> None:
        raise RuntimeError("the notifier is gone")

    service.sink = sink
    service.settle = settle

    async def main() -> None:
        xid_at(store, clock, 4, 400.0)
        await asyncio.wait_for(done.wait(), 5.0)

    asyncio.run(main())
    assert order == ["FellOff", "Counted"]


@pytest.mark.parametrize("send_s", [0.03, None])
def test_the_next_group_waits_for_the_notifications_to_leave_at_most_a_bound(
    monkeypatch: pytest.MonkeyPatch, send_s: float | None
) -> None:
    """With a ``settle`` hook (the daemon's: its notify ticks in flight), the next group runs
    once the first group's notification has left, however long that takes, up to
    SETTLE_MAX_S; a notification that never leaves holds it back no longer."""
    monkeypatch.setattr(rules_service, "SETTLE_MAX_S", 0.2)
    store, clock = host(10)
    service = RuleService(store, clock, [], external_labels={}, state_dir=None)
    service.manager = manager(store, TWO_GROUPS)
    store.on_change(service.on_change)
    order: list[str] = []
    sending: set[asyncio.Future[None]] = set()
    done = asyncio.Event()

    async def send(name: str) -> None:
        await asyncio.sleep(send_s if send_s is not None else 3600.0)
        order.append(f"sent {name}")

    def sink(transitions: list[AlertTransition]) -> None:
        for t in transitions:
            order.append(t.alert.name)
            if t.alert.name == "Counted":
                done.set()
            else:
                sending.add(asyncio.ensure_future(send(t.alert.name)))

    async def settle(timeout: float) -> None:
        await asyncio.wait(set(sending), timeout=timeout)

    service.sink = sink
    service.settle = settle

    async def main() -> float:
        loop = asyncio.get_running_loop()
        started = loop.time()
        xid_at(store, clock, 4, 400.0)
        await asyncio.wait_for(done.wait(), 5.0)
        for task in sending:
            task.cancel()
        return loop.time() - started

    took = asyncio.run(main())  # (wait_for bounds it: a wait that never ends fails there)
    if send_s is not None:
        assert order == ["FellOff", "sent FellOff", "Counted"]
    else:
        assert order == ["FellOff", "Counted"]
        assert took >= 0.2  # it did wait, the bound long
