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
import struct
from collections.abc import Callable, Mapping
from typing import NamedTuple

from inferwatch.alerts.lifecycle import Candidate
from inferwatch.alerts.model import ALERTNAME, Alert, Annotations, LazyAnnotations
from inferwatch.gotemplate.builtins import FuncError
from inferwatch.gotemplate.templates import (
    QueryResult,
    QuerySample,
    Template,
    TemplateData,
    expand_for_rule,
)
from inferwatch.labels import Labels, make_labels
from inferwatch.promql.engine import (
    EvalError,
    EvalOptions,
    PromQLError,
    Query,
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


class AlertSeries(NamedTuple):
    """Names of the ALERTS-like series: inferwatch's own, or Prometheus's in test-rules."""

    alerts: str = "inferwatch_alerts"
    for_state: str = "inferwatch_alerts_for_state"


PROMETHEUS_ALERT_SERIES = AlertSeries("ALERTS", "ALERTS_FOR_STATE")


def as_vector(value: Value) -> Vector:
    if value.__class__ is list:  # a vector, nearly always
        return value
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


class QueryCache:
    """Template ``query`` strings compiled once each (bounded)."""

    def __init__(self, size: int = 512) -> None:
        self._size = size
        self._cache: dict[str, Query | PromQLError] = {}

    def get(self, text: str) -> Query:
        found = self._cache.get(text)
        if found is None:
            try:
                found = load(text)
            except PromQLError as exc:
                found = exc
            if len(self._cache) >= self._size:
                self._cache.clear()
            self._cache[text] = found
        if isinstance(found, PromQLError):
            raise FuncError(str(found))
        return found


def template_query(
    store: SeriesStore, ts: float, options: EvalOptions, cache: QueryCache
) -> Callable[[str], QueryResult]:
    """The ``query`` template function for one evaluation."""

    def run(text: str) -> QueryResult:
        try:
            vec = as_vector(evaluate(cache.get(text), store, ts, options))
        except PromQLError as exc:
            raise FuncError(str(exc)) from None
        return QueryResult(QuerySample(dict(s.metric()), s.value) for s in vec)

    return run


class Expansions:
    """Expanded rule templates by what they can depend on: a template that never calls
    ``query`` is a pure function of its text and its dot (the sample's labels and exact value,
    the external labels and URL). An alert held for minutes expands the same annotations at
    every evaluation; this keeps them. A template that calls ``query`` is a pure function of
    its dot and the answers it got: its text is kept with the questions it asked, in order, and
    reused while each of them gets the same answer again (the same answers take the template
    down the same path, asking the same questions). A template that cannot read the value
    (``Template.reads_value``) is kept across values: an alert whose value moves at every
    evaluation (``increase(…) > 0``) has its other annotations expanded once."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._done: dict[tuple[object, ...], str] = {}
        self._asked: dict[tuple[object, ...], tuple[str, tuple[tuple[str, QueryResult], ...]]]
        self._asked = {}

    def expand(
        self,
        template: Template,
        data: TemplateData,
        context: tuple[object, ...],
        query: Callable[[str], QueryResult],
    ) -> str:
        """``context``: what else the dot holds (labels with name, value bits, externals)."""
        if self._size <= 0:
            return expand_for_rule(template, data, query)
        if template.reads_value:
            key = (template.name, template.source, *context)
        else:
            key = (template.name, template.source, context[0], *context[2:])
        if "query" in template.source:
            return self._expand_asking(key, template, data, query)
        text = self._done.get(key)
        if text is None:
            text = expand_for_rule(template, data, query)
            if len(self._done) >= self._size:
                self._done.clear()
            self._done[key] = text
        return text

    def _expand_asking(
        self,
        key: tuple[object, ...],
        template: Template,
        data: TemplateData,
        query: Callable[[str], QueryResult],
    ) -> str:
        kept = self._asked.get(key)
        if kept is not None and same_answers(kept[1], query):
            return kept[0]
        asking = Asking(query)
        text = expand_for_rule(template, data, asking)
        if not asking.failed:  # a failed question may be answered next time: ask again then
            if len(self._asked) >= self._size:
                self._asked.clear()
            self._asked[key] = (text, tuple(asking.asked))
        return text


class Asking:
    """A ``query`` function keeping each question asked through it and its answer, in order;
    ``failed`` when one raised (what was expanded with it is not kept)."""

    __slots__ = ("_query", "asked", "failed")

    def __init__(self, query: Callable[[str], QueryResult]) -> None:
        self._query = query
        self.asked: list[tuple[str, QueryResult]] = []
        self.failed = False

    def __call__(self, text: str) -> QueryResult:
        try:
            found = self._query(text)
        except BaseException:
            self.failed = True
            raise
        self.asked.append((text, found))
        return found


def same_answers(
    asked: tuple[tuple[str, QueryResult], ...], query: Callable[[str], QueryResult]
) -> bool:
    """Whether each question, asked again in order, gets the same answer to the bit (one the
    ``query`` function refuses: no)."""
    for text, answer in asked:
        try:
            again = query(text)
        except FuncError:
            return False
        if again is not answer and _bits(again) != _bits(answer):
            return False
    return True


def _bits(answer: QueryResult) -> list[tuple[list[tuple[str, str]], bytes]]:
    """An answer exactly: labels in order, values by their bits (``-0`` prints unlike ``0``)."""
    return [(list(s.labels.items()), struct.pack("<d", s.value)) for s in answer]


def once_each(query: Callable[[str], QueryResult]) -> Callable[[str], QueryResult]:
    """``query`` answering each text once: for one rule's candidates, whose templates see one
    store at one time (``summary`` and ``summary_zh`` ask the same question)."""
    done: dict[str, QueryResult] = {}

    def run(text: str) -> QueryResult:
        found = done.get(text)
        if found is None:
            found = done[text] = query(text)
        return found

    return run


def candidates(
    rule: AlertingRule,
    vec: Vector,
    external_labels: Mapping[str, str],
    external_url: str,
    query: Callable[[str], QueryResult],
    expansions: Expansions | None = None,
) -> list[Candidate]:
    out: list[Candidate] = []
    seen: set[Labels] = set()
    memo = expansions or Expansions(0)
    if expansions is not None:
        query = once_each(query)
    outside = (tuple(external_labels.items()), external_url)
    for s in vec:
        metric = s.metric()
        data = TemplateData(dict(metric), external_labels, external_url, s.value)
        context = (metric, struct.pack("<d", s.value), *outside)
        labels = dict(s.labels)
        for name, template in rule.labels:
            text = memo.expand(template, data, context, query)
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
        out.append(Candidate(final, _notes(rule, memo, data, context, query), s.value))
    return out


def _notes(
    rule: AlertingRule,
    memo: Expansions,
    data: TemplateData,
    context: tuple[object, ...],
    query: Callable[[str], QueryResult],
) -> Annotations:
    """A candidate's annotations: those that ``query`` expanded now, against the store as it
    is at this evaluation; the others when first read (``LazyAnnotations``)."""
    now = {name: memo.expand(t, data, context, query) for name, t in rule.annotations
           if "query" in t.source}  # fmt: skip
    if len(now) == len(rule.annotations):
        return tuple((name, now[name]) for name, _ in rule.annotations)

    def late(template: Template) -> str:
        """Run by whoever reads the alert (a notifier, the API): a failure the template's own
        errors do not cover becomes the annotation's text, as they do, never the reader's."""
        try:
            return memo.expand(template, data, context, query)
        except Exception as exc:
            return f"<error expanding template: {template.name}: {type(exc).__name__}: {exc}>"

    def later() -> tuple[tuple[str, str], ...]:
        return tuple((name, now[name] if name in now else late(t)) for name, t in rule.annotations)

    return LazyAnnotations(later)


def alert_rows(rule: AlertingRule, active: list[Alert], names: AlertSeries) -> list[Row]:
    """ALERTS and ALERTS_FOR_STATE rows: the rule's raw labels overlaid with the alert's."""
    rows: list[Row] = []
    for a in active:
        base = {**dict(rule.raw_labels), **dict(a.labels)}
        state = {**base, "alertstate": a.state.value}
        rows.append((names.alerts, make_labels(state), 1.0))
        rows.append((names.for_state, make_labels(base), float(math.floor(a.active_at))))
    return rows
