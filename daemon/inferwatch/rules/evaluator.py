"""The rule manager: evaluates groups over the store and keeps every rule's state.

    manager = RuleManager(rule_set, store, {"host": "gpu1"}, "http://gpu1:9945")
    transitions = manager.evaluate_all(t)           # or evaluate_group / evaluate_due

It is pure given the time it is handed: no clock reads, no sleeping. A group runs its rules in
file order; recording rules write gauges into the store that later rules see at once, and each
rule ends with staleness markers what it stopped producing. Alerting rules go through
:class:`RuleAlerts` and write ``inferwatch_alerts``/``inferwatch_alerts_for_state`` (or
``ALERTS``/``ALERTS_FOR_STATE`` for test-rules). A failing rule is recorded and skipped; the
others still run. Group intervals: the file's ``interval``, else ``default_interval_s`` (1 s in
the daemon; promtool's tests instead run every group at their ``evaluation_interval``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from inferwatch.alerts import state as saved
from inferwatch.alerts.lifecycle import RESOLVED_RETENTION_S, LimitExceeded, RuleAlerts
from inferwatch.alerts.model import Alert, AlertTransition, RuleKey
from inferwatch.gotemplate.templates import QueryResult
from inferwatch.labels import Labels
from inferwatch.promql.absent import empty_without, names_if_empty_without
from inferwatch.promql.ast import MatrixSelector, selectors
from inferwatch.promql.context import Ctx
from inferwatch.promql.engine import DEFAULT_OPTIONS, EvalError, EvalOptions, Vector
from inferwatch.promql.index import SelectionCache, cache_for
from inferwatch.promql.partition import Pairs, Part
from inferwatch.rules import partial
from inferwatch.rules import rule_eval as ev
from inferwatch.rules.alert_hold import Held, pure, signature
from inferwatch.rules.outputs import RuleOutputs
from inferwatch.rules.partial import MAX_PARTS, partition_of, scope
from inferwatch.rules.rule_status import GroupOutcome, RuleError, RuleStatus
from inferwatch.rules.ruleset import AlertingRule, RecordingRule, Rule, RuleGroup, RuleSet
from inferwatch.store.limits import ALERTS_PER_RULE
from inferwatch.store.tsdb import SeriesStore


def _sees(rule: Rule, metric: str, labels: Labels, *, templates: bool = True) -> bool:
    """Whether a selector of ``rule`` (its expression, or with ``templates`` a template's query
    literal too) matches the series (``metric``, ``labels``); a selector without a metric name
    always may."""
    literals = rule.query_literals if templates and isinstance(rule, AlertingRule) else ()
    values = {**dict(labels), "__name__": metric}
    for query in (rule.query, *literals):
        for found in selectors(query.ast):
            sel = found.selector if isinstance(found, MatrixSelector) else found
            if sel.name is not None and sel.name != metric:
                continue
            if all(m.matches(values.get(m.name, "")) for m in sel.matchers):
                return True
    return False


DEFAULT_INTERVAL_S = 1.0

__all__ = ["DEFAULT_INTERVAL_S", "GroupOutcome", "RuleError", "RuleManager", "RuleStatus"]


@dataclass(slots=True)
class _RuleState:
    outputs: RuleOutputs = field(default_factory=RuleOutputs)
    alerts: RuleAlerts | None = None
    health: str = "unknown"
    last_error: str = ""
    last_eval: float | None = None
    held: Held | None = None  # the last full evaluation of a pure alerting rule


StateKey = tuple[RuleKey, bool, int]
"""A rule's state: its key, whether it alerts, and which of identical rules in a group it is."""


def _touching(group: RuleGroup, metric: str, labels: Labels) -> frozenset[int] | None:
    if any(not isinstance(r, AlertingRule) for r in group.rules):
        return None
    return frozenset(i for i, rule in enumerate(group.rules) if _sees(rule, metric, labels))


class RuleManager:
    def __init__(
        self,
        rule_set: RuleSet,
        store: SeriesStore,
        external_labels: Mapping[str, str] | None = None,
        external_url: str = "",
        *,
        options: EvalOptions = DEFAULT_OPTIONS,
        default_interval_s: float = DEFAULT_INTERVAL_S,
        series: ev.AlertSeries = ev.AlertSeries(),  # noqa: B008 (frozen)
        resolved_retention_s: float = RESOLVED_RETENTION_S,
        restore_policy: saved.RestorePolicy = saved.RestorePolicy(),  # noqa: B008 (frozen)
        alert_limit: int = 0,
    ) -> None:
        self.store = store
        # alerts per alerting rule in groups without a `limit` of their own (0: none)
        self.alert_limit = alert_limit
        self.external_labels = dict(external_labels or {})
        self.external_url = external_url
        self.options = options
        self.default_interval_s = default_interval_s
        self.series = series
        self.resolved_retention_s = resolved_retention_s
        self.restore_policy = restore_policy
        self._queries = ev.QueryCache()
        self._expansions = ev.Expansions()
        self._rule_set = RuleSet()
        self._states: dict[StateKey, _RuleState] = {}
        self._group_last: dict[tuple[str, str], float] = {}
        self._reading: dict[str, frozenset[RuleGroup]] = {}
        self._touched: dict[tuple[RuleGroup, str, Labels], frozenset[int] | None] = {}
        self._plans: dict[RuleGroup, list[tuple[int, Rule, _RuleState]]] = {}
        self._absent_names: dict[RuleGroup, frozenset[str] | None] = {}
        self._pure_rules: dict[RuleKey, bool] = {}
        self._selections = cache_for(store, options)
        selections = self._selections
        # the cache events are judged within partitions through (rules.partial): plan only
        self._partial = selections if isinstance(selections, SelectionCache) else None
        self._parts: dict[tuple[RuleGroup, int], Part | None] = {}
        self._restore: dict[RuleKey, list[Alert]] = {}
        self._saved_at = 0.0
        # Groups in a run of quiet evaluations (``_nothing_to_read``), with the last one's time:
        # their rules' status was written by the run's first evaluation, the time is written
        # when read or when the run ends (``_settle``).
        self._quiet_run: dict[RuleGroup, float] = {}
        self.swap(rule_set, 0.0)

    @property
    def rule_set(self) -> RuleSet:
        return self._rule_set

    # -- rule sets ----------------------------------------------------------------------------
    def swap(self, rule_set: RuleSet, t: float | None = None) -> list[AlertTransition]:
        """Install a new rule set, keeping the state of rules that still exist (same file,
        group, name, expression and labels). Removed rules end their series; their firing
        alerts resolve (returned)."""
        now = self.store.clock.time() if t is None else t
        self._settle_all()
        old = self._states
        self._states = {}
        for key in _state_keys(rule_set):
            state = old.pop(key, None)
            if state is None:
                state = _RuleState(alerts=RuleAlerts(key[0]) if key[1] else None)
            state.held = None  # the group's limit may have changed
            self._states[key] = state
        gone: list[AlertTransition] = []
        for state in old.values():
            if state.alerts is not None:
                gone.extend(state.alerts.clear(now))
            state.outputs.retire(self.store, now)
        groups = {(g.file, g.name) for g in rule_set.groups}
        self._group_last = {k: v for k, v in self._group_last.items() if k in groups}
        self._rule_set = rule_set
        self._reading = {}
        self._touched = {}
        self._parts = {}
        self._plans = {group: self._plan(group) for group in rule_set.groups}
        self._absent_names = {group: _absent_names(group) for group in rule_set.groups}
        self._empty_at: dict[RuleGroup, tuple[int, bool]] = {}
        self._quiet_at: dict[RuleGroup, int] = {}
        self._rule_empty: dict[tuple[RuleGroup, int], tuple[int, bool]] = {}
        self._group_empty: dict[RuleGroup, tuple[int, list[bool]]] = {}
        self._expansions = ev.Expansions()
        return gone

    def _nothing_to_read(self, group: RuleGroup, plan: list[tuple[int, Rule, _RuleState]]) -> bool:
        """Whether evaluating the group now is sure to change nothing: every rule's expression
        is empty without error while some of its metrics do not exist (judged once per store
        generation), and no rule holds an alert or a written series."""
        if not self.options.plan or self._restore:
            return False
        generation = self.store.generation  # moves when a series is created (none is removed)
        if self._quiet_at.get(group) == generation:
            return True  # found so before, and skipping the group since changed nothing
        known = self._empty_at.get(group)
        if known is None or known[0] != generation:
            known = self._empty_at[group] = (generation, self._all_empty(group))
        if not known[1] or not all(_holds_nothing(state) for _, _, state in plan):
            return False
        self._quiet_at[group] = generation
        return True

    def _all_empty(self, group: RuleGroup) -> bool:
        names = self._absent_names.get(group)
        if names is not None and not self.store.has_any(names):
            return True  # none of the metrics the group reads exists
        return all(self._empty_rules(group))  # the same judgement the evaluation then reuses

    def _empty_rules(self, group: RuleGroup) -> list[bool]:
        """For each rule of the group, whether its expression is empty without error while
        some metrics do not exist (``_expr_empty``), judged once per store generation."""
        generation = self.store.generation
        known = self._group_empty.get(group)
        if known is None or known[0] != generation:
            rules = enumerate(group.rules)
            known = (generation, [self._expr_empty(group, i, rule) for i, rule in rules])
            self._group_empty[group] = known
        return known[1]

    def _expr_empty(self, group: RuleGroup, index: int, rule: Rule) -> bool:
        generation = self.store.generation
        key = (group, index)
        known = self._rule_empty.get(key)
        if known is None or known[0] != generation:
            known = (generation, empty_without(rule.query.ast, self.store.has))
            self._rule_empty[key] = known
        return known[1]

    def _plan(self, group: RuleGroup) -> list[tuple[int, Rule, _RuleState]]:
        """The group's rules with their index and state, looked up once per rule set."""
        pairs = zip(group.rules, _group_keys(group), strict=True)
        return [(i, rule, self._states[key]) for i, (rule, key) in enumerate(pairs)]

    def interval_of(self, group: RuleGroup) -> float:
        return group.interval_s or self.default_interval_s

    def rules_reading(self, metric: str) -> set[RuleGroup]:
        """Groups to evaluate when ``metric`` changes: those reading it, and those reading what
        those record (transitively)."""
        if not self.options.plan:
            return set(self._rule_set.groups_reading(metric))
        found = self._reading.get(metric)
        if found is None:
            found = self._reading[metric] = frozenset(self._rule_set.groups_reading(metric))
        return set(found)

    # -- evaluation ---------------------------------------------------------------------------
    def evaluate_all(self, t: float) -> list[AlertTransition]:
        out: list[AlertTransition] = []
        for group in self._rule_set.groups:
            out.extend(self.evaluate_group(group, t))
        return out

    def evaluate_due(self, t: float) -> list[AlertTransition]:
        """Evaluate, in file order, the groups whose interval has elapsed since their last run."""
        out: list[AlertTransition] = []
        for group in self._rule_set.groups:
            last = self._group_last.get((group.file, group.name))
            if last is None or t < last or t - last >= self.interval_of(group) - 1e-9:
                out.extend(self.evaluate_group(group, t))
        return out

    def evaluate_group(self, group: RuleGroup, t: float) -> list[AlertTransition]:
        return list(self.evaluate_group_outcome(group, t).transitions)

    def evaluate_groups(self, groups: Iterable[RuleGroup], t: float) -> list[AlertTransition]:
        """:meth:`evaluate_group` for each of ``groups`` in turn, their transitions in order. A
        group already in a run of quiet evaluations (``_ran_quiet``) with no series created
        since costs a lookup and its time: a replay ticks nine groups and most stay quiet."""
        out: list[AlertTransition] = []
        generation = self.store.generation
        quiet_at, quiet_run = self._quiet_at, self._quiet_run
        for group in groups:
            if quiet_at.get(group) == generation and group in quiet_run and not self._restore:
                self._quiet_again(group, t)  # as _ran_quiet records it
                continue
            out.extend(self.evaluate_group_outcome(group, t).transitions)
        return out

    def touched(self, group: RuleGroup, metric: str, labels: Labels) -> frozenset[int] | None:
        """Indices of the group's rules that can see a change of series (``metric``,
        ``labels``): a selector of theirs matches it. None = evaluate the whole group (it
        records something, or a selector has no metric name)."""
        if not self.options.plan:
            return _touching(group, metric, labels)
        key = (group, metric, labels)
        if key in self._touched:
            return self._touched[key]
        if len(self._touched) > 10_000:
            self._touched.clear()
        found = self._touched[key] = _touching(group, metric, labels)
        return found

    def partition(self, group: RuleGroup, index: int, metric: str, labels: Labels) -> Pairs | None:
        """The partition of the changed series (``metric``, ``labels``) within which rule
        ``index`` of ``group`` can be judged (``rules.partial``); None: judge the whole rule
        (it mixes series, records, or its expression does not read this series: a template's
        query does)."""
        if self._partial is None:
            return None
        key = (group, index)
        if key not in self._parts:
            rule = group.rules[index]
            part = partition_of(rule) if isinstance(rule, AlertingRule) else None
            self._parts[key] = part
        part = self._parts[key]
        if part is None or not _sees(group.rules[index], metric, labels, templates=False):
            return None
        pairs = part.pairs(labels)
        if pairs is None or not any(value for _, value in pairs):
            return None  # only labels the series lacks: no index narrows that partition
        return pairs

    def evaluate_rules(
        self,
        group: RuleGroup,
        t: float,
        only: frozenset[int],
        within: Mapping[int, frozenset[Pairs]] | None = None,
    ) -> list[AlertTransition]:
        """Evaluate some alerting rules of a group now (a series they read changed); the
        group's own schedule is not moved. ``within``: for some of them, the partitions that
        changed (``partition``): those are judged there only."""
        return list(self.evaluate_group_outcome(group, t, only, within).transitions)

    def evaluate_group_outcome(
        self,
        group: RuleGroup,
        t: float,
        only: frozenset[int] | None = None,
        within: Mapping[int, frozenset[Pairs]] | None = None,
    ) -> GroupOutcome:
        plan = (self._plans.get(group) if self.options.plan else None) or self._plan(group)
        if only is None and self._ran_quiet(group, plan, t):
            return _NOTHING
        if self._quiet_run:
            self._settle(group)
        ts = t - group.query_offset_s
        queries = self._queries if self.options.plan else ev.QueryCache(0)
        query = ev.template_query(self.store, ts, self.options, queries)
        transitions: list[AlertTransition] = []
        errors: list[RuleError] = []
        ctx = Ctx(self.store, float(ts), self.options, self._selections)
        fast = self.options.plan
        # judged at this generation; after a rule of the group creates a series, judged again
        generation, empty = (
            self.store.generation,
            self._empty_rules(group) if fast and not self._restore else None,
        )
        for index, rule, state in plan:
            if only is not None and index not in only:
                continue
            if (
                empty is not None
                and empty[index]
                and _holds_nothing(state)
                and (self.store.generation == generation or self._expr_empty(group, index, rule))
            ):
                state.health, state.last_error, state.last_eval = "ok", "", t
                continue
            failure = ""
            parts = within.get(index) if within else None
            moved = (
                self._within(group, rule, state, (float(ts), t), parts, query, errors)
                if parts
                else None  # judged whole (``_within`` says so for no partition)
            )
            if moved is not None:
                transitions.extend(moved)
                ctx.forget()  # later rules read the ALERTS series written now
                continue
            try:
                # promql.evaluate, one Ctx per group
                run = rule.query.run if fast else rule.query.runner(self.options)
                vec = ev.as_vector(run(ctx))
                if isinstance(rule, AlertingRule):
                    assert state.alerts is not None
                    wrote = state.outputs.previous
                    if (
                        not fast
                        or vec
                        or state.outputs.previous
                        or self._restore
                        or not state.alerts.settled(t, self.resolved_retention_s)
                    ):
                        transitions.extend(self._alerting(group, rule, state, vec, query, t))
                    if wrote or state.outputs.previous:
                        ctx.memo.clear()  # later rules read the ALERTS series written now
                else:
                    ctx.memo.clear()  # later rules may read what this one records
                    self._record(group, rule, state, vec, t)
            except LimitExceeded as exc:
                transitions.extend(exc.transitions)
                failure = str(exc)
                self.store.count_dropped(ALERTS_PER_RULE, rule.name, (), exc.found)
            except Exception as exc:  # one failing rule never stops the others
                failure = str(exc) or type(exc).__name__
            ctx.windows.clear()  # this rule may have written: windows are read afresh
            state.health, state.last_error, state.last_eval = (
                ("err" if failure else "ok"),
                failure,
                t,
            )
            if failure:
                errors.append(RuleError(group.file, group.name, rule.name, t, failure))
        if only is None:
            self._group_last[(group.file, group.name)] = t
        return GroupOutcome(tuple(transitions), tuple(errors))

    def _record(
        self, group: RuleGroup, rule: Rule, state: _RuleState, vec: Vector, t: float
    ) -> None:
        """Write a recording rule's result."""
        assert isinstance(rule, RecordingRule)
        refused = state.outputs.write(self.store, ev.recorded(rule, vec, group.limit), t)
        if refused:
            raise EvalError(
                f"{refused} new series dropped: a series limit is reached "
                "(limits in `inferwatch status`)"
            )

    def _alerting(
        self,
        group: RuleGroup,
        rule: AlertingRule,
        state: _RuleState,
        vec: Vector,
        query: Callable[[str], QueryResult],
        t: float,
    ) -> list[AlertTransition]:
        assert state.alerts is not None
        idle = not vec and not len(state.alerts) and not state.outputs.previous
        if idle and rule.key not in self._restore and self.options.plan:
            return []  # nothing found, held or written: the full path would change nothing
        held, result = state.held, None
        if held is not None and rule.key not in self._restore:
            result = signature(vec)
            if result == held.signature:
                if held.asked:
                    query = ev.once_each(query)  # a full evaluation below reuses these answers
                if (not held.asked or ev.same_answers(held.asked, query)) and state.alerts.hold(
                    held.labels, t, self.resolved_retention_s
                ):
                    state.outputs.write(self.store, held.rows, t)
                    return []  # the same alerts, all firing: only their evaluation time moved
        plan = self.options.plan
        expansions = self._expansions if plan else None
        asking = ev.Asking(query) if plan and not self._pure(rule) else None
        found = ev.candidates(rule, vec, self.external_labels, self.external_url,
                              query if asking is None else asking, expansions)  # fmt: skip
        for alert in self._restore.pop(rule.key, ()):
            back = saved.restored(alert, t, rule.for_s, self._saved_at, self.restore_policy)
            if back is not None:
                state.alerts.insert(back)
        state.held = None
        limit = group.limit or self.alert_limit
        out = state.alerts.apply(found, t, rule.for_s, rule.keep_firing_for_s, limit,
                                 self.resolved_retention_s)  # fmt: skip
        rows = ev.alert_rows(rule, state.alerts.active(), self.series)
        state.outputs.write(self.store, rows, t)
        if plan and (asking is None or not asking.failed):
            labels = frozenset(c.labels for c in found)
            asked = () if asking is None else tuple(asking.asked)
            state.held = Held(result or signature(vec), labels, tuple(rows), asked)
        return out

    def _within(
        self,
        group: RuleGroup,
        rule: Rule,
        state: _RuleState,
        at: tuple[float, float],
        parts: frozenset[Pairs] | None,
        query: Callable[[str], QueryResult],
        errors: list[RuleError],
    ) -> list[AlertTransition] | None:
        """The rule judged within ``parts`` only, at ``at`` (query time, evaluation time);
        None when it must be judged whole: alerts being restored, a rule that failed last
        time, too many partitions, or anything ``partial.candidates_within`` refuses."""
        ts, t = at
        if (
            not parts
            or not isinstance(rule, AlertingRule)
            or self._partial is None
            or self._restore
            or state.health != "ok"
            or len(parts) > MAX_PARTS
            or state.alerts is None
        ):
            return None
        expansions, outside = self._expansions, (self.external_labels, self.external_url)
        found = partial.candidates_within(
            rule, parts, self.options, partial.reading(self.store, ts, self.options, self._partial),
            lambda vec: ev.candidates(rule, vec, *outside, query, expansions),
        )  # fmt: skip
        if found is None:
            return None
        limit = group.limit or self.alert_limit
        state.held = None  # what it held was a whole evaluation's
        state.health, state.last_error, state.last_eval = "ok", "", t
        try:
            out = state.alerts.apply(found, t, rule.for_s, rule.keep_firing_for_s, limit,
                                     self.resolved_retention_s, scope=scope(parts))  # fmt: skip
        except LimitExceeded as exc:  # as a whole evaluation: nothing written, the error kept
            self.store.count_dropped(ALERTS_PER_RULE, rule.name, (), exc.found)
            state.health, state.last_error = "err", str(exc)
            errors.append(RuleError(group.file, group.name, rule.name, t, str(exc)))
            return exc.transitions
        state.outputs.write(self.store, ev.alert_rows(rule, state.alerts.active(), self.series), t)
        return out

    def _pure(self, rule: AlertingRule) -> bool:
        found = self._pure_rules.get(rule.key)
        if found is None:
            found = self._pure_rules[rule.key] = pure(rule)
        return found

    # -- alerts and status --------------------------------------------------------------------
    def alerts(self, include_resolved: bool = False) -> list[Alert]:
        out: list[Alert] = []
        for state in self._states.values():
            if state.alerts is not None:
                held = state.alerts.alerts() if include_resolved else state.alerts.active()
                out.extend(held)
        return out

    def active_alerts(self) -> list[Alert]:
        return self.alerts()

    def firing(self, alertname: str) -> list[Alert]:
        return [a for a in self.alerts() if a.name == alertname and a.state.value == "firing"]

    def _ran_quiet(
        self, group: RuleGroup, plan: list[tuple[int, Rule, _RuleState]], t: float
    ) -> bool:
        """Whether evaluating the group at ``t`` is sure to change nothing
        (``_nothing_to_read``); if so, the evaluation is recorded as run."""
        if not self._nothing_to_read(group, plan):
            return False
        if group not in self._quiet_run:
            for _, _, state in plan:  # every rule ran, and found nothing
                state.health, state.last_error, state.last_eval = "ok", "", t
        self._quiet_again(group, t)
        return True

    def _quiet_again(self, group: RuleGroup, t: float) -> None:
        """Record a quiet evaluation of a group in a quiet run: the time only, for now."""
        self._quiet_run[group] = t
        self._group_last[(group.file, group.name)] = t

    def _settle(self, group: RuleGroup) -> None:
        """End the group's run of quiet evaluations: its rules' status gets the last one's
        time."""
        t = self._quiet_run.pop(group, None)
        if t is not None:
            for key in _group_keys(group):
                self._states[key].last_eval = t

    def _settle_all(self) -> None:
        for group in list(self._quiet_run):
            self._settle(group)

    def rule_status(self) -> list[RuleStatus]:
        self._settle_all()
        out = []
        for group, rule, state in self._walk():
            kind = "alerting" if isinstance(rule, AlertingRule) else "recording"
            out.append(RuleStatus(group.file, group.name, rule.name, kind, state.health,
                                  state.last_error, state.last_eval))  # fmt: skip
        return out

    def _walk(self) -> list[tuple[RuleGroup, Rule, _RuleState]]:
        out = []
        for group in self._rule_set.groups:
            for rule, key in zip(group.rules, _group_keys(group), strict=True):
                out.append((group, rule, self._states[key]))
        return out

    # -- persistence --------------------------------------------------------------------------
    def to_json(self, saved_at: float | None = None) -> str:
        """Every pending and firing alert, for :meth:`from_json` after a restart."""
        at = self.store.clock.time() if saved_at is None else saved_at
        return saved.encode(self.alerts(), at)

    def from_json(self, text: str) -> int:
        """Queue saved alerts for restoring at each rule's next evaluation (call before the
        first one); returns how many were read. Raises :class:`StateError`."""
        saved_at, alerts = saved.decode(text)
        self._saved_at = saved_at
        self._restore = {}
        for alert in alerts:
            self._restore.setdefault(alert.rule, []).append(alert)
        return len(alerts)


_NOTHING = GroupOutcome((), ())


def _holds_nothing(state: _RuleState) -> bool:
    """No alert (pending, firing or resolved and kept) and no series written last time: an
    evaluation that finds nothing changes nothing."""
    return not state.outputs.previous and not (state.alerts is not None and len(state.alerts))


def _absent_names(group: RuleGroup) -> frozenset[str] | None:
    """The metrics the group reads if every rule of it is empty while none of them exists."""
    names: set[str] = set()
    for rule in group.rules:
        found = names_if_empty_without(rule.query.ast)
        if found is None:
            return None
        names |= found
    return frozenset(names) if names else None


def _group_keys(group: RuleGroup) -> list[StateKey]:
    keys: list[StateKey] = []
    seen: dict[tuple[RuleKey, bool], int] = {}
    for rule in group.rules:
        kind = (rule.key, isinstance(rule, AlertingRule))
        n = seen[kind] = seen.get(kind, -1) + 1
        keys.append((*kind, n))
    return keys


def _state_keys(rule_set: RuleSet) -> list[StateKey]:
    return [key for group in rule_set.groups for key in _group_keys(group)]
