"""Vector matching: the one-element-each shortcut of ``_Matcher`` against its general path.

A rule comparing an engine's series with that engine's threshold matches one element with one
element at every evaluation; ``_Matcher`` takes a short path for it. It must give exactly what
the general path gives (the result's name, labels and value bits, or nothing) for every
operator, matching (``on``, ``ignoring``, ``group_left``/``group_right`` with included labels,
``bool``) and label sets, matching or not.
"""

from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from inferwatch.labels import make_labels
from inferwatch.promql.ast import ARITHMETIC_OPS, COMPARISON_OPS, Cardinality, VectorMatching
from inferwatch.promql.binary import _Matcher, signature
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
