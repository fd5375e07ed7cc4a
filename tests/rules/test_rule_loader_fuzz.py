"""A bad rule file never stops the good ones: whatever a broken file holds, it is reported with
located problems, and the rules of the other files load and evaluate."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from inferwatch.clock import FakeClock
from inferwatch.rules.evaluator import RuleManager
from inferwatch.rules.loader import load_rule_files, load_rule_text
from inferwatch.store.tsdb import SeriesStore

GOOD = """groups:
  - name: good
    rules:
      - record: good:x
        expr: x * 2
      - alert: GoodAlert
        expr: good:x > 1
        labels: {severity: warning}
        annotations: {summary: "x is {{ $value }}"}
"""

TEMPLATE = """groups:
  - name: bad
    interval: 10s
    rules:
      - alert: Bad
        expr: sum(rate(y[5m])) by (job) > 0
        for: 5m
        labels: {severity: "{{ $labels.job }}"}
        annotations: {summary: "{{ humanize $value }}"}
"""


@st.composite
def broken(draw: st.DrawFn) -> str:
    """A rule file with random damage: cut, inserted or replaced characters, or plain noise."""
    kind = draw(st.sampled_from(["cut", "insert", "replace", "noise"]))
    if kind == "noise":
        return draw(st.text(max_size=200))
    at = draw(st.integers(0, len(TEMPLATE)))
    junk = draw(st.text(alphabet="{}[]()$:|\"'`-#!&* \n\tab1=~.", min_size=1, max_size=8))
    if kind == "cut":
        return TEMPLATE[:at] + TEMPLATE[at + len(junk) :]
    if kind == "insert":
        return TEMPLATE[:at] + junk + TEMPLATE[at:]
    return TEMPLATE[:at] + junk + TEMPLATE[at + len(junk) :]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_loading_text_never_raises(text: str) -> None:
    groups, problems = load_rule_text(text, "f.yaml")
    assert not (groups and problems)
    for p in problems:
        assert p.path == "f.yaml" and p.line >= 1 and p.col >= 1


@settings(max_examples=150, deadline=None)
@given(broken())
def test_bad_file_never_stops_the_good_one(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        bad, good = Path(tmp, "a-bad.yaml"), Path(tmp, "b-good.yaml")
        bad.write_text(text, encoding="utf-8")
        good.write_text(GOOD, encoding="utf-8")
        rule_set, problems = load_rule_files([bad, good])
    assert all(p.path == str(bad) for p in problems)
    assert any(g.name == "good" for g in rule_set.groups)
    store = SeriesStore(FakeClock(0.0))
    store.set("x", (), 3.0, 0.0)
    store.set("y", (("job", "a"),), 1.0, 0.0)
    manager = RuleManager(rule_set, store)
    transitions = manager.evaluate_all(0.0)
    assert [t.alert.name for t in transitions if t.fired] == ["GoodAlert"]
