"""One rule's evaluation, from query result to what gets written or alerted on.

Recording (reference/promql.md §7.2): a scalar becomes one label-less sample; the output takes
the record name and the rule's labels (not templated; an empty value removes the label). Alerting
(§7.3): every output element is a candidate whatever its value; its labels are the element's
without ``__name__``, then each rule label expanded from its template (empty removes), then
``alertname``. Templates see ``$labels`` with ``__name__`` and can ``query`` the store at the
rule's evaluation time. A duplicate label set fails the rule, as in Prometheus.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from inferwatch.alerts.lifecycle import Candidate
from inferwatch.alerts.model import ALERTNAME, Alert
from inferwatch.gotemplate.builtins import FuncError
from inferwatch.gotemplate.templates import (
    QueryResult,
    QuerySample,
    TemplateData,
    expand_for_rule,
)
from inferwatch.labels import Labels, make_labels
from inferwatch.promql.engine import (
    EvalError,
    EvalOptions,
    PromQLError,
    Sample,
    Scalar,
    String,
    Value,
    Vector,
    evaluate,
    load,
)
from inferwatch.rules.ruleset import AlertingRule, RecordingRule
from inferwatch.store.tsdb import SeriesStore

Row = tuple[str, Labels, float]
"""(metric name, labels, value): one sample a rule writes."""


@dataclass(frozen=True, slots=True)
class AlertSeries:
    """Names of the ALERTS-like series: inferwatch's own, or Prometheus's in test-rules."""

    alerts: str = "inferwatch_alerts"
    for_state: str = "inferwatch_alerts_for_state"


PROMETHEUS_ALERT_SERIES = AlertSeries("ALERTS", "ALERTS_FOR_STATE")


def as_vector(value: Value) -> Vector:
    if isinstance(value, Scalar):
        return [Sample("", (), value.value)]
    if isinstance(value, String):
        raise EvalError("rule result is not a vector or scalar")
    return value


def recorded(rule: RecordingRule, vec: Vector, limit: int) -> list[Row]:
    rows: list[Row] = []
    seen: set[Labels] = set()
    for s in vec:
        labels = dict(s.labels)
        for k, v in rule.labels:
            if v:
                labels[k] = v
            else:
                labels.pop(k, None)
        final = make_labels(labels)
        if final in seen:
            raise EvalError(
                "vector contains metrics with the same labelset after applying rule labels"
            )
        seen.add(final)
        rows.append((rule.name, final, s.value))
    if limit > 0 and len(rows) > limit:
        raise EvalError(f"exceeded limit of {limit} with {len(rows)} series")
    return rows


def template_query(
    store: SeriesStore, ts: float, options: EvalOptions
) -> Callable[[str], QueryResult]:
    """The ``query`` template function for one evaluation."""

    def run(text: str) -> QueryResult:
        try:
            vec = as_vector(evaluate(load(text), store, ts, options))
        except PromQLError as exc:
            raise FuncError(str(exc)) from None
        return QueryResult(QuerySample(dict(s.metric()), s.value) for s in vec)

    return run


def candidates(
    rule: AlertingRule,
    vec: Vector,
    external_labels: Mapping[str, str],
    external_url: str,
    query: Callable[[str], QueryResult],
) -> list[Candidate]:
    out: list[Candidate] = []
    seen: set[Labels] = set()
    for s in vec:
        data = TemplateData(dict(s.metric()), external_labels, external_url, s.value)
        labels = dict(s.labels)
        for name, template in rule.labels:
            text = expand_for_rule(template, data, query)
            if text:
                labels[name] = text
            else:
                labels.pop(name, None)
        labels[ALERTNAME] = rule.name
        final = make_labels(labels)
        if final in seen:
            raise EvalError(
                "vector contains metrics with the same labelset after applying alert labels"
            )
        seen.add(final)
        notes = tuple((name, expand_for_rule(t, data, query)) for name, t in rule.annotations)
        out.append(Candidate(final, notes, s.value))
    return out


def alert_rows(rule: AlertingRule, active: list[Alert], names: AlertSeries) -> list[Row]:
    """ALERTS and ALERTS_FOR_STATE rows: the rule's raw labels overlaid with the alert's."""
    rows: list[Row] = []
    for a in active:
        base = {**dict(rule.raw_labels), **dict(a.labels)}
        state = {**base, "alertstate": a.state.value}
        rows.append((names.alerts, make_labels(state), 1.0))
        rows.append((names.for_state, make_labels(base), float(math.floor(a.active_at))))
    return rows
