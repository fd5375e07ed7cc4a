"""Vector matching: the one-element-each shortcuts against the general paths.

A rule comparing an engine's series with that engine's threshold matches one element with one
element at every evaluation; ``_Matcher`` takes a short path for it. It must give exactly what
the general path gives (the result's name, labels and value bits, or nothing) for every
operator, matching (``on``, ``ignoring``, ``group_left``/``group_right`` with included labels,
``bool``) and label sets, matching or not. The set operations (``and``, ``or``, ``unless``)
take short paths with one element on a side: they must keep exactly the elements, in the order,
that the definitions by key sets keep.
"""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from inferwatch.labels import make_labels
from inferwatch.promql.ast import ARITHMETIC_OPS, COMPARISON_OPS, Cardinality, VectorMatching
from inferwatch.promql.binary import _and, _Matcher, _or, _unless, signature
from inferwatch.promql.types import Sample, Vector

_NAMES = ["", "up", "x"]
_LABELS = ["engine", "dp_rank", "job", "__name__", "gpu"]
_VALUES = [0.0, -0.0, 1.0, 2.5, -3.0, float("nan"), float("inf"), float("-inf"), 1e308]

labels = st.dictionaries(
    st.sampled_from(["engine", "dp_rank", "job", "gpu"]), st.sampled_from(["a", "b", ""]),
    max_size=4,
)  # fmt: skip
samples = st.builds(
    lambda name, pairs, value: Sample(name, make_labels(pairs), value),
    st.sampled_from(_NAMES),
    labels,
    st.sampled_from(_VALUES),
)


@st.composite
def matchers(draw: st.DrawFn) -> tuple[str, VectorMatching, bool]:
    op = draw(st.sampled_from(sorted(ARITHMETIC_OPS | COMPARISON_OPS)))
    card = draw(st.sampled_from([Cardinality.ONE_TO_ONE, Cardinality.MANY_TO_ONE,
                                 Cardinality.ONE_TO_MANY]))  # fmt: skip
    on = draw(st.booleans())
    names = tuple(draw(st.lists(st.sampled_from(_LABELS), max_size=3, unique=True)))
    include: tuple[str, ...] = ()
    if card is not Cardinality.ONE_TO_ONE:
        include = tuple(draw(st.lists(st.sampled_from(_LABELS[:3]), max_size=2, unique=True)))
    return_bool = op in COMPARISON_OPS and draw(st.booleans())
    return op, VectorMatching(card, on=on, labels=names, include=include), return_bool


def _bits(vec: Vector) -> list[tuple[str, object, bytes]]:
    return [(s.name, s.labels, struct.pack("<d", s.value)) for s in vec]


@settings(max_examples=600, deadline=None)
@given(matchers(), samples, samples)
def test_one_element_each_matches_the_general_path(
    spec: tuple[str, VectorMatching, bool], left: Sample, right: Sample
) -> None:
    op, matching, return_bool = spec
    matcher = _Matcher(op, matching, return_bool, signature(matching))
    assert _bits(matcher([left], [right])) == _bits(matcher._general([left], [right]))


def test_the_usual_threshold_comparison_takes_the_short_path() -> None:
    """``decode < on(engine) group_left() anchor``: kept with the left side's labels and value;
    a different engine, or a value at the threshold, gives nothing."""
    matching = VectorMatching(Cardinality.MANY_TO_ONE, on=True, labels=("engine",))
    matcher = _Matcher("<", matching, False, signature(matching))
    decode = Sample("decode", make_labels({"engine": "a", "dp_rank": "0"}), 90.0)
    anchor = Sample("anchor", make_labels({"engine": "a"}), 100.0)
    assert matcher([decode], [anchor]) == [decode]
    other = Sample("anchor", make_labels({"engine": "b"}), 100.0)
    assert matcher([decode], [other]) == []
    assert matcher([decode._replace(value=100.0)], [anchor]) == []


def _by_sets(op: str, lhs: Vector, rhs: Vector, sig: object) -> Vector:
    """The set operations as PromQL defines them, by the sets of matching keys."""
    key = sig  # Signature: a sample's matching key
    assert callable(key)
    right, left = {key(s) for s in rhs}, {key(s) for s in lhs}
    if op == "and":
        return [s for s in lhs if key(s) in right]
    if op == "unless":
        return [s for s in lhs if key(s) not in right]
    return lhs + [s for s in rhs if key(s) not in left]


@settings(max_examples=600, deadline=None)
@given(
    st.sampled_from(["and", "or", "unless"]),
    st.booleans(),
    st.lists(st.sampled_from(_LABELS), max_size=3, unique=True),
    st.lists(samples, max_size=3),
    st.lists(samples, max_size=3),
)
def test_set_operations_match_their_definitions(
    op: str, on: bool, names: list[str], lhs: Vector, rhs: Vector
) -> None:
    sig = signature(VectorMatching(Cardinality.MANY_TO_MANY, on=on, labels=tuple(names)))
    fast = {"and": _and, "or": _or, "unless": _unless}[op]
    assert _bits(fast(lhs, rhs, sig)) == _bits(_by_sets(op, lhs, rhs, sig))


def test_one_element_set_operations() -> None:
    """One engine's series on each side: kept or dropped by the ``on`` labels alone."""
    sig = signature(VectorMatching(Cardinality.MANY_TO_MANY, on=True, labels=("engine",)))
    a0 = Sample("x", make_labels({"engine": "a", "dp_rank": "0"}), 1.0)
    a1 = Sample("y", make_labels({"engine": "a", "dp_rank": "1"}), 2.0)
    b = Sample("y", make_labels({"engine": "b"}), 3.0)
    assert _and([a0], [a1], sig) == [a0] and _and([a0], [b], sig) == []
    assert _unless([a0], [a1], sig) == [] and _unless([a0], [b], sig) == [a0]
    assert _or([a0], [a1], sig) == [a0] and _or([a0], [b], sig) == [a0, b]
    assert _and([a0, b], [a1], sig) == [a0] and _unless([a0, b], [a1], sig) == [b]
