"""Random and garbled expressions.

Alone: loading raises PromQLError or succeeds, and evaluating raises PromQLError (EvalError) or
returns a value of the loaded type, never any other exception. Against promtool (when installed):
the same generated expressions over the same input give the same samples or the same error, up to
what promtool itself leaves random (series order: ties in topk/bottomk, which duplicate a
many-to-many error names) and the last bits of transcendental functions (Go's own exp/log/trig
versus the C library's).
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inferwatch.clock import FakeClock
from inferwatch.labels import make_labels
from inferwatch.promql.ast import expr_key, subexpressions
from inferwatch.promql.engine import (
    DEFAULT_OPTIONS,
    PLAIN_OPTIONS,
    PromQLError,
    Query,
    Scalar,
    String,
    Value,
    ValueType,
    evaluate,
    load,
)
from inferwatch.promql.functions import FUNCTIONS
from inferwatch.promql.load import parse
from inferwatch.promtool.expr_tests import run_expr_tests
from inferwatch.promtool.testfile import expand_values, load_test_file, parse_metric
from inferwatch.rules.loader import load_rule_files
from inferwatch.store.tsdb import SeriesStore

_VALUES = ["0", "1.5", "-2", "NaN", "Inf", "1e308", "-0", "3", "stale", "7"]


def _input_series() -> list[dict[str, str]]:
    """The shared input, in promtool notation (30 s apart): gauges with NaN, ±Inf, -0, markers,
    and a counter-like bucket family with a junk ``le``."""
    out = []
    for name in ("a", "b", "c_bucket"):
        for job in ("x", "y"):
            for i, le in enumerate(("0.5", "1", "+Inf", "junk")):
                if name == "c_bucket":
                    vals = " ".join(str(k * 3) for k in range(12))
                else:
                    vals = " ".join(_VALUES[(k * 7 + i + len(name)) % 10] for k in range(12))
                series = f'{name}{{job="{job}", le="{le}", i="{i}"}}'
                out.append({"series": series, "values": vals})
    return out


def _test_doc(exprs: list[tuple[str, str]]) -> dict[str, object]:
    probe = [{"labels": '{__probe__="x"}', "value": 0}]
    tests = [{"expr": e, "eval_time": t, "exp_samples": probe} for e, t in exprs]
    return {
        "tests": [{"interval": "30s", "input_series": _input_series(), "promql_expr_test": tests}]
    }


def _store() -> SeriesStore:
    store = SeriesStore(FakeClock(0.0), retention_s=math.inf)
    for item in _input_series():
        name, pairs = parse_metric(item["series"])
        for k, v in enumerate(expand_values(item["values"])):
            if v is not None:
                store.set(name, make_labels(pairs), v, k * 30.0)
    return store


STORE = _store()

names = st.sampled_from(["a", "b", "c_bucket", "nope"])
labels = st.sampled_from(["job", "le", "i", "__name__", "zz"])
values = st.sampled_from(["x", "y", "", ".*", "x|y", "(", "0.5", "a"])
ops = st.sampled_from(["=", "!=", "=~", "!~"])
durations = st.sampled_from(["30s", "1m", "5m", "90s", "1h"])
numbers = st.sampled_from(["0", "1", "-1", "0.5", "2", "NaN", "Inf", "-Inf", "1e308", "3"])


@st.composite
def selector(draw: st.DrawFn, range_: bool = False) -> str:
    matchers = draw(st.lists(st.tuples(labels, ops, values), max_size=3))
    inner = ",".join(f'{n}{o}"{v}"' for n, o, v in matchers)
    text = f"{draw(names)}{{{inner}}}" if inner or draw(st.booleans()) else draw(names)
    if range_:
        text += f"[{draw(durations)}]"
    if draw(st.booleans()):
        text += f" offset {draw(st.sampled_from(['', '-']))}{draw(durations)}"
    if draw(st.booleans()):
        text += f" @ {draw(st.sampled_from(['60', '0', '-30', 'start()', 'end()', '1.5']))}"
    return text


def _combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    fn_names = st.sampled_from(sorted(FUNCTIONS))
    binops = st.sampled_from(
        [
            "+",
            "-",
            "*",
            "/",
            "%",
            "^",
            "atan2",
            "==",
            "!=",
            ">",
            "<",
            ">=",
            "<=",
            "and",
            "or",
            "unless",
        ]
    )
    modifiers = st.sampled_from(
        [
            "",
            " bool",
            " on(job)",
            " ignoring(i)",
            " on(job) group_left(le)",
            " ignoring(le, i) group_right",
            " bool on()",
            " on(job, i)",
        ]
    )
    aggs = st.sampled_from(
        [
            "sum",
            "avg",
            "min",
            "max",
            "count",
            "group",
            "stddev",
            "stdvar",
            "topk",
            "bottomk",
            "quantile",
            "count_values",
        ]
    )
    grouping = st.sampled_from(["", " by (job)", " without (i)", " by (__name__)", " by ()"])

    strings = st.sampled_from(['"job"', '"(.*)"', '"le"', '"$1"', '""', '"1bad"', '","'])

    def argument(kind: ValueType) -> st.SearchStrategy[str]:
        if kind is ValueType.MATRIX:
            return selector(range_=True)
        if kind is ValueType.SCALAR:
            return st.one_of(numbers, children.map(lambda c: f"scalar({c})"))
        if kind is ValueType.STRING:
            return strings
        return children

    @st.composite
    def call(draw: st.DrawFn) -> str:
        name = draw(fn_names)
        spec = FUNCTIONS[name]
        if draw(st.integers(0, 4)):  # mostly well-typed calls
            kinds = list(spec.args[: len(spec.args) - draw(st.integers(0, spec.optional))])
            args = [draw(argument(k)) for k in kinds]
        else:
            args = draw(st.lists(st.one_of(children, selector(range_=True), strings), max_size=5))
        return f"{name}({', '.join(args)})"

    @st.composite
    def binary(draw: st.DrawFn) -> str:
        return f"({draw(children)}) {draw(binops)}{draw(modifiers)} ({draw(children)})"

    @st.composite
    def aggregate(draw: st.DrawFn) -> str:
        op = draw(aggs)
        param = ""
        if op in ("topk", "bottomk", "quantile"):
            param = f"{draw(numbers)}, "
        elif op == "count_values":
            param = '"v", '
        return f"{op}{draw(grouping)} ({param}{draw(children)})"

    return st.one_of(call(), binary(), aggregate(), children.map(lambda c: f"-({c})"))


expressions = st.recursive(st.one_of(selector(), numbers), _combine, max_leaves=8)


@st.composite
def garbled(draw: st.DrawFn) -> str:
    text = draw(expressions)
    for _ in range(draw(st.integers(1, 3))):
        if not text:
            break
        i = draw(st.integers(0, len(text) - 1))
        kind = draw(st.sampled_from(["drop", "dup", "swap"]))
        if kind == "drop":
            text = text[:i] + text[i + 1 :]
        elif kind == "dup":
            text = text[:i] + text[i] + text[i:]
        else:
            text = (
                text[:i] + draw(st.sampled_from(list("()[]{},\"'`=~!@:-+*/^ 0a"))) + text[i + 1 :]
            )
    return text


def _outcome(query: Query, t: float, plan: bool) -> Value | PromQLError:
    try:
        return evaluate(query, STORE, t, DEFAULT_OPTIONS if plan else PLAIN_OPTIONS)
    except PromQLError as exc:
        return exc


def _check(text: str) -> None:
    """Load and evaluate ``text``, with the speed machinery and without (the same answer)."""
    try:
        query = load(text)
    except PromQLError:
        return
    assert isinstance(query, Query)
    for t in (0.0, 95.0, 330.0):
        result = _outcome(query, t, plan=True)
        plain = _outcome(query, t, plan=False)
        assert repr(plain) == repr(result), f"{text} at {t}: {plain!r} without plan"
        if isinstance(result, PromQLError):
            assert type(plain) is type(result)
            continue
        if query.type is ValueType.SCALAR:
            assert isinstance(result, Scalar)
        elif query.type is ValueType.STRING:
            assert isinstance(result, String)
        else:
            assert isinstance(result, list)
            assert len({(s.name, s.labels) for s in result}) == len(result)


FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(expressions)
def test_generated_expressions(text: str) -> None:
    _check(text)


@FUZZ
@given(garbled())
def test_garbled_expressions(text: str) -> None:
    _check(text)


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("abx_{}()[]\"'`=~!,.:@-+*/^%<>5m0 \\#\n")), max_size=40)
)
def test_random_text(text: str) -> None:
    _check(text)


# -- against promtool -------------------------------------------------------------------------
# Last-bit differences: libm versus Go's math, and aggregations whose rounding depends on the
# (random in promtool) order of the series.
_INEXACT = re.compile(
    r"\b(exp|ln|log2|log10|a?sinh?|a?cosh?|a?tanh?|atan2|sum|avg|stddev|stdvar)\b|\^"
)
_NUMBER = re.compile(r"-?\d(?:\.\d+)?E[+-]\d+")


def _blocks(text: str) -> list[str]:
    return [b.strip() for b in re.split(r"\n(?=    expr: )", text) if b.startswith("    expr: ")]


def _acceptable(expr: str, theirs: str, ours: str) -> bool:
    """Differences promtool itself makes random, or last bits (libm, summation order)."""
    if ", err: " in theirs and "parse error" in theirs and ", err: " in ours:
        return True  # both refuse (messages differ: promql-parser's wording is its own)
    if "many-to-many matching not allowed" in theirs and "many-to-many" in ours:
        return True  # which duplicate pair is named depends on series order
    got_theirs, got_ours = _NUMBER.findall(theirs), _NUMBER.findall(ours)
    if re.search(r"\b(topk|bottomk)\b", expr) and sorted(got_theirs) == sorted(got_ours):
        return True  # a tie: which series wins depends on series order
    if _INEXACT.search(expr) and _NUMBER.sub("#", theirs) == _NUMBER.sub("#", ours):
        pairs = zip(map(float, got_theirs), map(float, got_ours), strict=True)
        return all(math.isclose(a, b, rel_tol=1e-14) for a, b in pairs)
    return False


def test_same_answers_as_promtool(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        return  # covered by the other tests; nothing to compare against here
    exprs: list[str] = []

    @settings(max_examples=600, derandomize=True, database=None, deadline=None)
    @given(expressions)
    def collect(text: str) -> None:
        exprs.append(text)

    collect()
    times = ["0s", "1m35s", "5m30s"]
    cases = [(e, times[i % 3]) for i, e in enumerate(exprs[:400])]
    path = tmp_path / "differential.yaml"
    path.write_text(yaml.safe_dump(_test_doc(cases), width=10_000))
    done = subprocess.run(
        [promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=120
    )
    theirs = _blocks(done.stdout + done.stderr)
    ours = [f.message.strip() for f in run_expr_tests(load_test_file(path))]
    plain = [f.message.strip() for f in run_expr_tests(load_test_file(path), PLAIN_OPTIONS)]
    assert plain == ours  # the speed machinery changes no answer
    assert len(theirs) == len(ours) == len(cases)  # every probe fails, so each prints a block
    wrong = [
        f"promtool: {t}\nours:     {o}"
        for (expr, _), t, o in zip(cases, theirs, ours, strict=True)
        if t != o and not _acceptable(expr, t, o)
    ]
    assert not wrong, "\n\n".join(wrong[:5])


@FUZZ
@given(expressions)
def test_expression_keys_are_their_repr(text: str) -> None:
    """``expr_key``, the memo key of a compiled node, is its ``repr`` built once per node."""
    try:
        root = parse(text)
    except PromQLError:
        return
    known: dict[int, str] = {}
    for node in subexpressions(root):
        assert expr_key(node, known) == repr(node)


def test_shipped_rule_keys_are_their_repr() -> None:
    rule_set, problems = load_rule_files(sorted((Path(__file__).parents[2] / "rules").glob("*")))
    assert problems == []
    for _, rule in rule_set.rules():
        known: dict[int, str] = {}
        assert all(expr_key(n, known) == repr(n) for n in subexpressions(rule.query.ast))
