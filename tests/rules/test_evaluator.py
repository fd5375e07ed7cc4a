"""The rule manager: recording and alerting rules over the store, on explicit times."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator

import pytest

from inferwatch.alerts import lifecycle
from inferwatch.alerts.model import AlertState
from inferwatch.clock import FakeClock
from inferwatch.promql import functions as promql_functions
from inferwatch.promql import select as promql_select
from inferwatch.promql.ast import MatrixSelector
from inferwatch.promql.context import Ctx
from inferwatch.promql.types import DEFAULT_OPTIONS, PLAIN_OPTIONS, EvalOptions
from inferwatch.rules import evaluator as rules_evaluator
from inferwatch.rules.evaluator import RuleManager
from inferwatch.rules.loader import load_rule_text
from inferwatch.rules.ruleset import RuleGroup, RuleSet
from inferwatch.store.series import Series, is_stale
from inferwatch.store.tsdb import SeriesStore

A = (("job", "a"),)
B = (("job", "b"),)


def rules(text: str, path: str = "r.yaml") -> RuleSet:
    groups, problems = load_rule_text(text, path)
    assert problems == []
    return RuleSet(tuple(groups))


def store() -> SeriesStore:
    return SeriesStore(FakeClock(0.0), retention_s=math.inf)


def last(s: SeriesStore, name: str, labels: tuple[tuple[str, str], ...]) -> float | None:
    series = s.get(name, labels)
    found = series.last() if series is not None else None
    return None if found is None else found[1]


RECORD = """
groups:
  - name: g
    rules:
      - record: job:x:double
        expr: x * 2
      - alert: Big
        expr: job:x:double > 10
        for: 1m
        labels: {severity: warning, where: "{{ $labels.job }}"}
        annotations: {summary: "{{ $value }} {{ $externalLabels.host }}"}
"""


def test_recording_rules_write_and_later_rules_see_them(eval_options: EvalOptions) -> None:
    s = store()
    s.set("x", A, 6.0, 0.0)
    s.set("x", B, 1.0, 0.0)
    m = RuleManager(rules(RECORD), s, {"host": "h1"}, options=eval_options)
    out = m.evaluate_all(0.0)
    assert last(s, "job:x:double", A) == 12.0
    assert [(t.from_state, t.to_state) for t in out] == [(AlertState.INACTIVE, AlertState.PENDING)]
    alert = out[0].alert
    assert dict(alert.labels) == {
        "alertname": "Big",
        "job": "a",
        "severity": "warning",
        "where": "a",
    }
    assert dict(alert.annotations) == {"summary": "12 h1"}
    assert last(s, "inferwatch_alerts", (("alertname", "Big"), ("alertstate", "pending"), *A,
                                          ("severity", "warning"), ("where", "a"))) == 1.0  # fmt: skip
    s.set("x", A, 6.0, 60.0)
    s.set("x", B, 1.0, 60.0)
    fired = m.evaluate_all(60.0)
    assert [(t.from_state, t.to_state, t.at) for t in fired] == [
        (AlertState.PENDING, AlertState.FIRING, 60.0)
    ]
    assert fired[0].alert.fired_at == 60.0 and fired[0].alert.active_at == 0.0
    pending = s.get("inferwatch_alerts", (("alertname", "Big"), ("alertstate", "pending"), *A,
                                          ("severity", "warning"), ("where", "a")))  # fmt: skip
    assert pending is not None and is_stale(pending.vs[-1])
    for_state = (("alertname", "Big"), *A, ("severity", "warning"), ("where", "a"))
    assert last(s, "inferwatch_alerts_for_state", for_state) == 0.0


def test_vanished_recorded_series_get_a_marker_and_alerts_resolve(
    eval_options: EvalOptions,
) -> None:
    s = store()
    s.set("x", A, 6.0, 0.0)
    m = RuleManager(rules(RECORD), s, options=eval_options)
    m.evaluate_all(0.0)
    m.evaluate_all(60.0)
    s.mark_stale("x", A, 90.0)
    out = m.evaluate_all(120.0)
    series = s.get("job:x:double", A)
    assert series is not None and is_stale(series.vs[-1]) and series.ts[-1] == 120.0
    assert [(t.from_state, t.to_state) for t in out] == [(AlertState.FIRING, AlertState.RESOLVED)]
    assert m.active_alerts() == []
    (resolved,) = m.alerts(include_resolved=True)
    assert resolved.resolved_at == 120.0
    m.evaluate_all(120.0 + 900.0)
    assert m.alerts(include_resolved=True) != []
    m.evaluate_all(120.0 + 901.0)
    assert m.alerts(include_resolved=True) == []


ERRORS = """
groups:
  - name: g
    rules:
      - alert: Clash
        expr: x
        labels: {job: same}
      - record: ok
        expr: sum(x)
"""


def test_a_failing_rule_never_stops_the_others(eval_options: EvalOptions) -> None:
    s = store()
    s.set("x", A, 1.0, 0.0)
    s.set("x", B, 2.0, 0.0)
    m = RuleManager(rules(ERRORS), s, options=eval_options)
    group = m.rule_set.groups[0]
    outcome = m.evaluate_group_outcome(group, 0.0)
    (error,) = outcome.errors
    assert error.rule == "Clash"
    assert (
        error.message
        == "vector contains metrics with the same labelset after applying alert labels"
    )
    assert last(s, "ok", ()) == 3.0
    health = {st.rule: (st.health, st.last_error) for st in m.rule_status()}
    assert health["ok"] == ("ok", "") and health["Clash"][0] == "err"


INTERVALS = """
groups:
  - name: fast
    rules:
      - record: fast:x
        expr: x
  - name: slow
    interval: 30s
    rules:
      - record: slow:x
        expr: x
"""


def test_groups_run_at_their_interval(eval_options: EvalOptions) -> None:
    s = store()
    m = RuleManager(rules(INTERVALS), s, options=eval_options)
    seen: dict[str, list[float]] = {"fast": [], "slow": []}
    for t in range(61):
        s.set("x", (), float(t), float(t))
        m.evaluate_due(float(t))
    for name in seen:
        series = s.get(f"{name}:x", ())
        assert series is not None
        seen[name] = list(series.ts)
    assert seen["fast"] == [float(t) for t in range(61)]
    assert seen["slow"] == [0.0, 30.0, 60.0]
    assert m.interval_of(m.rule_set.groups[0]) == 1.0


READING = """
groups:
  - name: records
    rules:
      - record: y:sum
        expr: sum(inferwatch_y_total)
  - name: reads-records
    rules:
      - alert: YHigh
        expr: y:sum > 1
  - name: unrelated
    rules:
      - alert: Z
        expr: z > 1
  - name: by-regex
    rules:
      - alert: Any
        expr: '{__name__=~"inferwatch_y.*"} > 100'
"""


def test_rules_reading_follows_recorded_series(eval_options: EvalOptions) -> None:
    m = RuleManager(rules(READING), store(), options=eval_options)
    names = {g.name for g in m.rules_reading("inferwatch_y_total")}
    assert names == {"records", "reads-records", "by-regex"}
    assert {g.name for g in m.rules_reading("z")} == {"unrelated"}
    assert m.rules_reading("nothing") == set()


PENDING = """
groups:
  - name: g
    rules:
      - alert: Slow
        expr: x > 0
        for: 5m
      - record: r
        expr: x
"""


def test_swap_keeps_the_state_of_unchanged_rules(eval_options: EvalOptions) -> None:
    s = store()
    s.set("x", (), 1.0, 0.0)
    m = RuleManager(rules(PENDING), s, options=eval_options)
    m.evaluate_all(0.0)
    m.swap(rules(PENDING), 60.0)
    assert [a.active_at for a in m.active_alerts()] == [0.0]
    changed = PENDING.replace("x > 0", "x > 0.5").replace("- record: r\n        expr: x\n", "")
    gone = m.swap(rules(changed), 120.0)
    assert gone == [] and m.active_alerts() == []
    r = s.get("r", ())
    assert r is not None and is_stale(r.vs[-1])
    out = m.evaluate_all(180.0)
    assert [(t.to_state, t.alert.active_at) for t in out] == [(AlertState.PENDING, 180.0)]


def test_removed_firing_alerts_resolve(eval_options: EvalOptions) -> None:
    s = store()
    s.set("x", A, 6.0, 0.0)
    m = RuleManager(rules(RECORD), s, options=eval_options)
    m.evaluate_all(0.0)
    m.evaluate_all(60.0)
    gone = m.swap(RuleSet(), 70.0)
    assert [(t.from_state, t.to_state, t.at) for t in gone] == [
        (AlertState.FIRING, AlertState.RESOLVED, 70.0)
    ]


LIMIT = """
groups:
  - name: g
    limit: 1
    rules:
      - alert: Many
        expr: x > 0
"""


def test_limit_clears_and_resolves(eval_options: EvalOptions) -> None:
    s = store()
    s.set("x", A, 1.0, 0.0)
    m = RuleManager(rules(LIMIT), s, options=eval_options)
    assert [t.to_state for t in m.evaluate_all(0.0)] == [AlertState.FIRING]
    s.set("x", B, 1.0, 60.0)
    outcome = m.evaluate_group_outcome(m.rule_set.groups[0], 60.0)
    assert [e.message for e in outcome.errors] == ["exceeded limit of 1 with 2 alerts"]
    assert [(t.from_state, t.to_state) for t in outcome.transitions] == [
        (AlertState.FIRING, AlertState.RESOLVED)
    ]
    assert m.active_alerts() == []


QUERY = """
groups:
  - name: g
    query_offset: 1m
    rules:
      - alert: Q
        expr: x > 0
        annotations:
          other: '{{ with query "y" }}{{ . | first | value }}{{ end }}'
"""


def test_templates_query_the_store_at_the_evaluation_time(eval_options: EvalOptions) -> None:
    s = store()
    s.set("x", (), 1.0, 0.0)
    s.set("y", (), 7.0, 0.0)
    s.set("y", (), 8.0, 60.0)
    m = RuleManager(rules(QUERY), s, options=eval_options)
    (t,) = m.evaluate_all(60.0)
    assert t.alert.annotation("other") == "7"


TARGETED = """
groups:
  - name: gpu
    interval: 30s
    rules:
      - alert: FellOff
        expr: increase(xid_total{xid="79"}[5m]) > 0
      - alert: OtherXid
        expr: increase(xid_total{xid!="79"}[5m]) > 0
      - alert: AnyName
        expr: '{__name__=~"xid_.*", job="a"} > 100'
"""


def test_a_change_re_runs_only_the_rules_that_can_see_that_series(
    eval_options: EvalOptions,
) -> None:
    s = store()
    m = RuleManager(rules(TARGETED), s, {}, options=eval_options)
    (group,) = m.rule_set.groups
    assert m.touched(group, "xid_total", (("xid", "79"),)) == frozenset({0})
    assert m.touched(group, "xid_total", (("job", "a"), ("xid", "31"))) == frozenset({1, 2})
    assert m.touched(group, "other_total", (("xid", "79"),)) == frozenset()
    assert m.touched(rules(RECORD).groups[0], "x", A) is None  # records: the whole group
    s.inc("xid_total", (("xid", "79"),), 1.0, 0.0)
    s.inc("xid_total", (("xid", "79"),), 1.0, 10.0)
    out = m.evaluate_rules(group, 10.0, frozenset({0}))
    assert [t.alert.name for t in out] == ["FellOff"]
    # the group's own schedule did not move: its interval evaluation is still due
    assert (group.file, group.name) not in m._group_last
    m.evaluate_due(10.0)
    assert m._group_last[(group.file, group.name)] == 10.0


ABSENT = """
groups:
  - name: gpu
    rules:
      - record: job:xid:rate5m
        expr: rate(xid_total[5m])
      - alert: Xid
        expr: increase(xid_total[5m]) > 0 or (xid_total unless xid_total offset 5m)
"""


def test_a_group_over_metrics_that_never_existed_runs_as_empty(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No series of any metric the group reads: the rules report a run and find nothing,
    without their expressions running; the first sample makes them run again."""
    s = store()
    m = RuleManager(rules(ABSENT), s)
    group = m.rule_set.groups[0]
    read: list[str | None] = []
    real = promql_select.windows

    def counting(
        ctx: Ctx, msel: MatrixSelector
    ) -> Iterator[tuple[Series, array[float], array[float]]]:
        read.append(msel.selector.name)
        return real(ctx, msel)

    monkeypatch.setattr(promql_functions, "windows", counting)
    real_spans = promql_select.spans

    def counting_spans(ctx: Ctx, msel: MatrixSelector) -> Iterator[tuple[Series, int, int]]:
        read.append(msel.selector.name)  # rate() and increase() read index ranges
        return real_spans(ctx, msel)

    monkeypatch.setattr(promql_functions, "spans", counting_spans)
    assert m.evaluate_group(group, 10.0) == []
    assert read == []
    assert [(r.health, r.last_eval) for r in m.rule_status()] == [("ok", 10.0), ("ok", 10.0)]
    s.set("other_metric", A, 1.0, 11.0)  # a new series, of a metric the group does not read
    assert m.evaluate_group(group, 12.0) == []
    assert m.evaluate_group(group, 14.0) == []
    assert read == []
    assert [r.last_eval for r in m.rule_status()] == [14.0, 14.0]
    s.set("xid_total", A, 1.0, 15.0)
    out = m.evaluate_group(group, 20.0)
    assert read
    assert [(t.alert.name, t.to_state) for t in out] == [("Xid", AlertState.FIRING)]


SOME_ABSENT = """
groups:
  - name: engine
    rules:
      - alert: Present
        expr: x > 1
      - alert: BelowAnchor
        expr: quantile_over_time(0.5, x[5m]) < on(job) group_left() anchor
      - alert: Failing
        expr: (label_replace(x, "job", "same", "job", ".*") > 0) and on(job) anchor
"""


def test_a_rule_over_a_missing_metric_runs_as_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a group that runs, a rule that is empty (and cannot fail) while one of its metrics
    does not exist reports a run without its expression running, until a series of that
    metric appears; a rule that could fail on its own still runs and reports its error."""
    s = store()
    m = RuleManager(rules(SOME_ABSENT), s)
    group = m.rule_set.groups[0]
    ran: list[str] = []
    for rule in group.rules:
        real = rule.query.run

        def counting(ctx: Ctx, real=real, name=rule.name):  # type: ignore[no-untyped-def]
            ran.append(name)
            return real(ctx)

        object.__setattr__(rule.query, "run", counting)
    s.set("x", A, 5.0, 0.0)
    s.set("x", B, 5.0, 0.0)
    out = m.evaluate_group(group, 10.0)
    assert [t.alert.name for t in out] == ["Present", "Present"]
    assert ran == ["Present", "Failing"]
    status = {r.rule: (r.health, r.last_eval) for r in m.rule_status()}
    assert status["BelowAnchor"] == ("ok", 10.0)
    assert status["Failing"][0] == "err"  # two series become one label set: Prometheus fails
    ran.clear()
    _anchor_arrives(s, m, group, 11.0)
    assert ran == ["Present", "BelowAnchor", "Failing"]


def _anchor_arrives(s: SeriesStore, m: RuleManager, group: RuleGroup, at: float) -> None:
    """The missing ``anchor`` appears at ``at`` (with a new ``x``): evaluated 9 s later, the
    group's ``BelowAnchor`` fires for job a."""
    s.set("anchor", A, 10.0, at)
    s.set("x", A, 5.0, at)
    out = m.evaluate_group(group, at + 9.0)
    assert [(t.alert.name, t.alert.labels) for t in out] == [
        ("BelowAnchor", (("alertname", "BelowAnchor"), ("job", "a")))
    ]


ALL_EMPTY_NOW = """
groups:
  - name: engine
    rules:
      - alert: BelowAnchor
        expr: x < on(job) group_left() anchor
      - alert: Rising
        expr: rate(y[5m]) > 0
"""


def test_a_group_whose_rules_are_all_empty_for_now_is_skipped_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A group reading a metric that exists (``x``), each of whose rules is empty while some
    other metric is missing, runs no part of an evaluation (not even its query context) and
    reports every rule run; once the missing metric appears the group runs again."""
    contexts: list[float] = []

    class CountingCtx(Ctx):
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            contexts.append(self.t)

    monkeypatch.setattr(rules_evaluator, "Ctx", CountingCtx)
    s = store()
    m = RuleManager(rules(ALL_EMPTY_NOW), s)
    group = m.rule_set.groups[0]
    s.set("x", A, 5.0, 0.0)
    assert m.evaluate_group(group, 10.0) == []
    assert m.evaluate_group(group, 20.0) == []
    assert contexts == []
    status = {r.rule: (r.health, r.last_eval) for r in m.rule_status()}
    assert status == {"BelowAnchor": ("ok", 20.0), "Rising": ("ok", 20.0)}
    _anchor_arrives(s, m, group, 21.0)
    assert contexts == [30.0]


def test_a_quiet_run_writes_each_rules_status_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Evaluations that find the group quiet again write its rules' status once, at the
    first; the status still reports the last one's time: read during the run, after a partial
    evaluation ends it (for the rules it did not run), and across a rule-set swap."""
    writes: list[float | None] = []

    class CountingState(rules_evaluator._RuleState):
        def __setattr__(self, name: str, value: object) -> None:
            if name == "last_eval":
                writes.append(value)  # type: ignore[arg-type]
            super().__setattr__(name, value)

    monkeypatch.setattr(rules_evaluator, "_RuleState", CountingState)
    s = store()
    m = RuleManager(rules(ALL_EMPTY_NOW), s)
    group = m.rule_set.groups[0]
    writes.clear()  # the states' construction
    s.set("x", A, 5.0, 0.0)
    for t in (10.0, 20.0, 30.0):
        assert m.evaluate_group(group, t) == []
    assert writes == [10.0, 10.0]
    assert [r.last_eval for r in m.rule_status()] == [30.0, 30.0]
    assert m.evaluate_group(group, 40.0) == []
    s.set("anchor", A, 10.0, 41.0)  # the group is no longer quiet: only the first rule runs
    m.evaluate_rules(group, 42.0, frozenset({0}))
    assert [(r.rule, r.health, r.last_eval) for r in m.rule_status()] == [
        ("BelowAnchor", "ok", 42.0),
        ("Rising", "ok", 40.0),
    ]
    m2 = RuleManager(rules(ABSENT), store())
    g2 = m2.rule_set.groups[0]
    for t in (10.0, 20.0):
        assert m2.evaluate_group(g2, t) == []
    m2.swap(rules(ABSENT), 25.0)  # the same rules: their state, and its time, carry over
    assert [r.last_eval for r in m2.rule_status()] == [20.0, 20.0]
    assert m2.evaluate_group(m2.rule_set.groups[0], 30.0) == []
    m2.swap(rules(ALL_EMPTY_NOW), 35.0)  # other rules: the run ends with the old ones
    assert [(r.health, r.last_eval) for r in m2.rule_status()] == [("unknown", None)] * 2


def test_evaluating_groups_together_is_evaluating_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """``evaluate_groups`` (a replay's tick) gives what ``evaluate_group`` gives for each group in
    turn, transitions in order and every rule's status, and runs nothing for a group already
    in a quiet run while no series is created: a new series ends the run, as alone."""
    text = ALL_EMPTY_NOW + RECORD.replace("groups:\n", "")
    runs: list[str] = []
    real = RuleManager.evaluate_group_outcome

    def counted(self: RuleManager, group: RuleGroup, *args: object) -> object:
        runs.append(group.name)
        return real(self, group, *args)  # type: ignore[arg-type]

    alone, together = store(), store()
    m1, m2 = RuleManager(rules(text), alone), RuleManager(rules(text), together)
    for s in (alone, together):
        s.set("x", A, 5.0, 0.0)
    seen: list[object] = []
    ran: dict[float, list[str]] = {}
    for t in (10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0, 110.0):
        if t == 40.0:  # a new series: the quiet group runs again, and finds itself quiet
            for s in (alone, together):
                s.set("x", B, 9.0, 39.0)
        if t == 90.0:  # the quiet group's missing metric arrives
            for s in (alone, together):
                s.set("anchor", A, 10.0, 89.0)
        one_by_one = [tr for g in m1.rule_set.groups for tr in m1.evaluate_group(g, t)]
        seen += [(tr.alert.name, tr.to_state) for tr in one_by_one]
        monkeypatch.setattr(RuleManager, "evaluate_group_outcome", counted)
        runs.clear()
        assert m2.evaluate_groups(m2.rule_set.groups, t) == one_by_one
        monkeypatch.setattr(RuleManager, "evaluate_group_outcome", real)
        ran[t] = list(runs)
    assert m2.rule_status() == m1.rule_status()
    quiet, busy = (g.name for g in m2.rule_set.groups)
    # New series end a quiet run's shortcut: at 20 s the one recorded at 10 s, at 50 s the one
    # recorded at 40 s and Big's pending rows, at 90 s the anchor (BelowAnchor fires)
    skipped = [30.0, 60.0, 70.0, 80.0]
    assert [t for t, names in ran.items() if names == [busy]] == skipped
    assert all(names == [quiet, busy] for t, names in ran.items() if t not in skipped)
    firing = AlertState.FIRING
    assert ("BelowAnchor", firing) in seen and ("Big", firing) in seen


READS_ALERTS = """
groups:
  - name: g
    rules:
      - alert: Early
        expr: inferwatch_alerts{alertname="Fires"} > 5
      - alert: Fires
        expr: x > 0
      - alert: Follows
        expr: inferwatch_alerts{alertname="Fires"}
"""


def test_a_later_rule_reads_the_alerts_an_earlier_rule_wrote_at_this_time(
    eval_options: EvalOptions,
) -> None:
    """As Prometheus commits each rule's samples before the next rule runs, a rule reading the
    alerts series sees what a rule before it in the group wrote in the same evaluation, even
    when a rule before that read the same series (a result shared by the group's rules is
    dropped when an alerting rule writes)."""
    s = store()
    s.set("x", A, 1.0, 0.0)
    m = RuleManager(rules(READS_ALERTS), s, options=eval_options)
    out = m.evaluate_all(0.0)
    assert [(t.alert.name, t.to_state) for t in out] == [
        ("Fires", AlertState.FIRING),
        ("Follows", AlertState.FIRING),
    ]
    s.set("x", A, 1.0, 10.0)
    s.set("x", B, 1.0, 10.0)  # Early now reads job a's alert series, before Fires adds job b's
    out = m.evaluate_all(10.0)
    assert [(t.alert.name, dict(t.alert.labels)["job"], t.to_state) for t in out] == [
        ("Fires", "b", AlertState.FIRING),
        ("Follows", "b", AlertState.FIRING),
    ]


RESOLVING = """
groups:
  - name: g
    rules:
      - alert: High
        expr: x > 1
"""


def _history(
    skip: bool, monkeypatch: pytest.MonkeyPatch, options: EvalOptions = DEFAULT_OPTIONS
) -> list[object]:
    """Every evaluation's transitions and held alerts (resolved included), x high for 30 s."""

    if not skip:
        monkeypatch.setattr(lifecycle.RuleAlerts, "settled", lambda *_args: False)
    s = store()
    m = RuleManager(rules(RESOLVING), s, resolved_retention_s=120.0, options=options)
    out: list[object] = []
    for t in range(0, 400, 10):
        s.set("x", A, 5.0 if 30 <= t < 60 else 0.0, float(t))
        moved = [(tr.to_state.value, tr.at) for tr in m.evaluate_all(float(t))]
        held = [(a.state.value, a.resolved_at) for a in m.alerts(include_resolved=True)]
        out.append((t, moved, held))
    return out


def test_a_resolved_alert_is_kept_for_its_retention_then_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Evaluations that could only age a resolved alert are skipped (``settled``): the same
    transitions and the same alerts held, at every step, as evaluating in full."""
    fast = _history(True, monkeypatch)
    monkeypatch.undo()
    assert fast == _history(False, monkeypatch)
    monkeypatch.undo()
    assert fast == _history(True, monkeypatch, PLAIN_OPTIONS)  # no speed machinery at all
    held = {t: h for t, _, h in fast}  # type: ignore[misc]
    assert held[60] == [("resolved", 60.0)]
    assert held[180] == [("resolved", 60.0)]  # 120 s after the resolve: still kept
    assert held[190] == []
