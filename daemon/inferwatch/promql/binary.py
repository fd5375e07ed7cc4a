"""Binary operators: arithmetic, comparisons (with and without ``bool``), set operators, and
vector matching with ``on``/``ignoring``/``group_left``/``group_right`` (promql.md §5).

The rules that surprise: arithmetic drops ``__name__`` but ``atan2`` does not (Prometheus 2.42
lists only ``+ - * / % ^`` as name-dropping); a comparison keeps the vector's value even with the
scalar on the left; one-to-one ``on(l…)`` keeps only the ``on`` labels, even for a filtering
comparison; ``group_right`` comparisons keep the left (one-side) value on the right's labels; and
the many-to-many check on the "one" side runs before any matching, but only if both sides hold
something.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable

from inferwatch.golang.floats import go_div, go_mod, go_pow
from inferwatch.labels import NAME_LABEL, Labels
from inferwatch.promql.ast import (
    ARITHMETIC_OPS,
    COMPARISON_OPS,
    Binary,
    Cardinality,
    Expr,
    ValueType,
    VectorMatching,
    VectorSelector,
    value_type,
)
from inferwatch.promql.context import Compiler, Ctx, ScalarFn, VectorFn
from inferwatch.promql.cost import much_cheaper
from inferwatch.promql.safe import cannot_fail, unique_labels
from inferwatch.promql.types import (
    EvalError,
    Sample,
    Vector,
    check_unique,
    format_metric,
    get_label,
    set_label,
)

FloatOp = Callable[[float, float], float]
CompareOp = Callable[[float, float], bool]

ARITHMETIC: dict[str, FloatOp] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": go_div,
    "%": go_mod,
    "^": go_pow,
    "atan2": math.atan2,
}
COMPARISON: dict[str, CompareOp] = {
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
    ">=": operator.ge,
    "<=": operator.le,
}
_NAME_DROPPING = frozenset({"+", "-", "*", "/", "%", "^"})
Signature = Callable[[Sample], object]
Probe = Callable[[Ctx], bool]


def scalar_op(op: str) -> FloatOp:
    """Scalar ∘ scalar: comparisons (always with ``bool``) give 1 or 0."""
    if op in ARITHMETIC:
        return ARITHMETIC[op]
    cmp = COMPARISON[op]
    return lambda a, b: 1.0 if cmp(a, b) else 0.0


def build_scalar_binary(node: Binary, c: Compiler) -> ScalarFn:
    fn = scalar_op(node.op)
    lhs, rhs = c.scalar(node.lhs), c.scalar(node.rhs)
    return lambda ctx: fn(lhs(ctx), rhs(ctx))


def build_vector_binary(node: Binary, c: Compiler) -> VectorFn:
    left_scalar = value_type(node.lhs) is ValueType.SCALAR
    right_scalar = value_type(node.rhs) is ValueType.SCALAR
    if left_scalar or right_scalar:
        vec = c.vector(node.rhs if left_scalar else node.lhs)
        scalar = c.scalar(node.lhs if left_scalar else node.rhs)
        return _vector_scalar(node, vec, scalar, swap=left_scalar)
    lhs, rhs = c.vector(node.lhs), c.vector(node.rhs)
    matching = node.matching or VectorMatching(
        Cardinality.MANY_TO_MANY if node.op in ("and", "or", "unless") else Cardinality.ONE_TO_ONE,
        on=False,
        labels=(),
    )
    sig = signature(matching)
    if node.op == "or":
        return lambda ctx: _or(lhs(ctx), rhs(ctx), sig)
    if not c.options.plan:
        return _both_sides(node, lhs, rhs, matching, sig)
    if node.op == "and" and cannot_fail(node.rhs):
        probe = None if cannot_fail(node.lhs) else failure_probe(node.lhs, c)
        if probe is not None or cannot_fail(node.lhs):
            first = much_cheaper(node.rhs, node.lhs)
            turns = not first and not much_cheaper(node.lhs, node.rhs)
            return _deciding_side_first(lhs, rhs, sig, probe, right_first=first, turns=turns)
    if node.op == "and":
        op: Callable[[Vector, Vector], Vector] = lambda a, b: _and(a, b, sig)  # noqa: E731
    elif node.op == "unless":
        op = lambda a, b: _unless(a, b, sig)  # noqa: E731
    else:
        op = _Matcher(node.op, matching, node.return_bool, sig)
    if not cannot_fail(node.rhs):
        probe = failure_probe(node.rhs, c) if node.op in ("and", "unless") else None
        if probe is not None:
            return _probed(lhs, rhs, op, probe)
        return lambda ctx: op(lhs(ctx), rhs(ctx))

    if node.op in ("and", "unless"):  # the set operation called directly, not through ``op``
        setop = _and if node.op == "and" else _unless

        def lazy_set(ctx: Ctx) -> Vector:
            left = lhs(ctx)  # as ``lazy``
            return setop(left, rhs(ctx), sig) if left else []

        return lazy_set

    def lazy(ctx: Ctx) -> Vector:
        # An empty left side gives an empty result, and this right side cannot fail: skip it.
        left = lhs(ctx)
        return op(left, rhs(ctx)) if left else []

    return lazy


def _both_sides(
    node: Binary, lhs: VectorFn, rhs: VectorFn, matching: VectorMatching, sig: Signature
) -> VectorFn:
    """The plain path: both operands evaluated, left then right, as Prometheus does."""
    op: Callable[[Vector, Vector], Vector]
    if node.op == "and":
        op = lambda a, b: _and(a, b, sig)  # noqa: E731
    elif node.op == "unless":
        op = lambda a, b: _unless(a, b, sig)  # noqa: E731
    else:
        op = _Matcher(node.op, matching, node.return_bool, sig)
    return lambda ctx: op(lhs(ctx), rhs(ctx))


def _probed(
    lhs: VectorFn, rhs: VectorFn, op: Callable[[Vector, Vector], Vector], probe: Probe
) -> VectorFn:
    """``lhs and/unless rhs`` where ``rhs`` can fail only as the probe finds: with ``lhs``
    empty, ``rhs`` runs only for the error it would raise (Prometheus evaluates both sides)."""

    def run(ctx: Ctx) -> Vector:
        left = lhs(ctx)
        if left:
            return op(left, rhs(ctx))
        if probe(ctx):
            rhs(ctx)  # raises as Prometheus would
        return []

    return run


def failure_probe(node: Expr, c: Compiler) -> Probe | None:
    """For ``many <op> on(…) group_left() one`` (or ``group_right``) whose "many" side cannot
    fail and has unique label sets, and whose "one" side is a selector: a cheap test of whether
    it can fail now (the one side holds a duplicate match key). For a set operation (``and``,
    ``or``, ``unless``: they fail only in an operand): its failing operands' probes, any of
    which may find a failure. None for anything else."""
    if isinstance(node, Binary) and node.op in ("and", "or", "unless"):
        return _set_probe(node, c)
    if not isinstance(node, Binary) or node.matching is None or node.matching.include:
        return None
    card = node.matching.card
    if card is Cardinality.MANY_TO_ONE:
        many, one = node.lhs, node.rhs
    elif card is Cardinality.ONE_TO_MANY:
        many, one = node.rhs, node.lhs
    else:
        return None
    filtering = node.op in COMPARISON_OPS and not node.return_bool
    if not (filtering or node.op in ("+", "-", "*")):
        return None
    if not (isinstance(one, VectorSelector) and cannot_fail(many) and unique_labels(many)):
        return None
    select, sig = c.vector(one), signature(node.matching)

    def probe(ctx: Ctx) -> bool:
        keys = [sig(s) for s in select(ctx)]
        return len(set(keys)) != len(keys)

    return probe


def _set_probe(node: Binary, c: Compiler) -> Probe | None:
    probes: list[Probe] = []
    for side in (node.lhs, node.rhs):
        if value_type(side) is not ValueType.VECTOR:
            return None
        if cannot_fail(side):
            continue
        probe = failure_probe(side, c)
        if probe is None:
            return None
        probes.append(probe)
    if not probes:
        return None
    if len(probes) == 1:
        return probes[0]
    first, second = probes
    return lambda ctx: first(ctx) or second(ctx)


def _deciding_side_first(
    lhs: VectorFn,
    rhs: VectorFn,
    sig: Signature,
    probe: Probe | None,
    *,
    right_first: bool,
    turns: bool,
) -> VectorFn:
    """``lhs and rhs`` with either side first: ``rhs`` cannot fail, so when it is empty the
    left side matters only for an error, which it can raise only as ``probe`` finds (no probe:
    it cannot fail); when the left side is empty the right one cannot change the result. The
    much cheaper side runs first (``right_first``: the right one); with sides of comparable
    cost (``turns``), the one that decided the last empty result does: the order turns when the
    second side ran and was the empty one (an engine's recent reports checked in turn: the
    first condition that fails on a busy engine is soon the one checked first). A side that
    costs much more never goes first: it could stay there, empty, while the cheap side would
    have been empty too. The result is the same in every order."""

    def run(ctx: Ctx) -> Vector:
        nonlocal right_first
        if right_first:
            right = rhs(ctx)
            if not right:
                if probe is not None and probe(ctx):
                    lhs(ctx)  # raises as Prometheus would
                return []
            left = lhs(ctx)
            if not left and turns:
                right_first = False
            return _and(left, right, sig)
        left = lhs(ctx)
        if not left:
            return []
        right = rhs(ctx)
        if not right and turns:
            right_first = True
        return _and(left, right, sig)

    return run


def _vector_scalar(node: Binary, vec: VectorFn, scalar: ScalarFn, *, swap: bool) -> VectorFn:
    op = node.op
    if op in ARITHMETIC:
        fn = ARITHMETIC[op]
        drop = op in _NAME_DROPPING

        def arithmetic(ctx: Ctx) -> Vector:
            x = scalar(ctx)
            out = [
                Sample("" if drop else s.name, s.labels, fn(x, s.value) if swap else fn(s.value, x))
                for s in vec(ctx)
            ]
            if drop:
                check_unique(out)
            return out

        return arithmetic
    cmp = COMPARISON[op]
    if node.return_bool:

        def as_bool(ctx: Ctx) -> Vector:
            x = scalar(ctx)
            out = [
                Sample("", s.labels, 1.0 if (cmp(x, s.value) if swap else cmp(s.value, x)) else 0.0)
                for s in vec(ctx)
            ]
            check_unique(out)
            return out

        return as_bool

    def keep(ctx: Ctx) -> Vector:
        x = scalar(ctx)
        found = vec(ctx)
        if len(found) == 1:  # one engine's series: no comprehension
            s = found[0]
            return [s] if (cmp(x, s.value) if swap else cmp(s.value, x)) else []
        if swap:
            return [s for s in found if cmp(x, s.value)]
        return [s for s in found if cmp(s.value, x)]

    return keep


def signature(matching: VectorMatching) -> Signature:
    """The matching key of an element: its ``on`` labels, or all but the ``ignoring`` ones."""
    if matching.on:
        names = tuple(sorted(set(matching.labels)))
        if NAME_LABEL in names:
            return lambda s: tuple(get_label(s.name, s.labels, n) for n in names)
        return _KeysByLabels(lambda labels: tuple(dict(labels).get(n, "") for n in names))
    if not matching.labels:
        return lambda s: s.labels
    dropped = frozenset(matching.labels)
    return _KeysByLabels(lambda labels: tuple(p for p in labels if p[0] not in dropped))


class _KeysByLabels:
    """Matching keys that depend on the labels alone (not ``__name__``), remembered per label
    set: a series' samples carry the same labels object every evaluation, so its key is found
    again by identity (an entry holds its labels, so their id cannot name another object)."""

    __slots__ = ("_key", "_keys")

    def __init__(self, key: Callable[[Labels], object]) -> None:
        self._key = key
        self._keys: dict[int, tuple[Labels, object]] = {}

    def __call__(self, s: Sample) -> object:
        labels = s.labels
        found = self._keys.get(id(labels))
        if found is not None and found[0] is labels:
            return found[1]
        key = self._key(labels)
        if len(self._keys) >= _KEYS_MAX:
            self._keys.clear()
        self._keys[id(labels)] = (labels, key)
        return key


_KEYS_MAX = 4096


# The set operations with one element on a side compare its key alone: a rule's operands are
# mostly one engine's series, and a comprehension costs a call of its own (CPython 3.11).


def _and(lhs: Vector, rhs: Vector, sig: Signature) -> Vector:
    if not lhs or not rhs:
        return []
    if len(rhs) == 1:
        key = sig(rhs[0])
        if len(lhs) == 1:
            return [lhs[0]] if sig(lhs[0]) == key else []
        return [s for s in lhs if sig(s) == key]
    right = {sig(s) for s in rhs}
    return [s for s in lhs if sig(s) in right]


def _or(lhs: Vector, rhs: Vector, sig: Signature) -> Vector:
    if not lhs or not rhs:
        return lhs + rhs
    if len(lhs) == 1 and len(rhs) == 1:
        return [lhs[0]] if sig(rhs[0]) == sig(lhs[0]) else [lhs[0], rhs[0]]
    left = {sig(s) for s in lhs}
    return lhs + [s for s in rhs if sig(s) not in left]


def _unless(lhs: Vector, rhs: Vector, sig: Signature) -> Vector:
    if not lhs or not rhs:
        return list(lhs)
    if len(rhs) == 1:
        key = sig(rhs[0])
        if len(lhs) == 1:
            return [] if sig(lhs[0]) == key else [lhs[0]]
        return [s for s in lhs if sig(s) != key]
    right = {sig(s) for s in rhs}
    return [s for s in lhs if sig(s) not in right]


class _Matcher:
    """Arithmetic or comparison between two vectors, one-to-one or many-to-one."""

    def __init__(self, op: str, matching: VectorMatching, return_bool: bool, sig: Signature):
        self.matching = matching
        self.return_bool = return_bool
        self.sig = sig
        self.arith = ARITHMETIC.get(op)
        self.cmp = COMPARISON.get(op) if op in COMPARISON_OPS else None
        assert op in ARITHMETIC_OPS or self.cmp is not None
        self.drop_name = op in _NAME_DROPPING or return_bool
        self.on_labels = frozenset(matching.labels)

    def _duplicate(self, new: Sample, old: Sample) -> EvalError:
        m = self.matching
        if m.on:
            name = new.name if NAME_LABEL in self.on_labels else ""
            labels: Labels = tuple(p for p in new.labels if p[0] in self.on_labels)
        else:
            name, labels = "", tuple(p for p in new.labels if p[0] not in self.on_labels)
        side = "left" if m.card is Cardinality.ONE_TO_MANY else "right"
        return EvalError(
            f"found duplicate series for the match group {format_metric(name, labels)} on the "
            f"{side} hand-side of the operation: [{format_metric(new.name, new.labels)}, "
            f"{format_metric(old.name, old.labels)}];many-to-many matching not allowed: "
            "matching labels must be unique on one side"
        )

    def _result_metric(self, many: Sample, one: Sample) -> tuple[str, Labels]:
        m = self.matching
        name = "" if self.drop_name else many.name
        labels = many.labels
        if m.card is Cardinality.ONE_TO_ONE:
            if m.on:
                labels = tuple(p for p in labels if p[0] in self.on_labels)
                if NAME_LABEL not in self.on_labels:
                    name = ""
            elif m.labels:
                labels = tuple(p for p in labels if p[0] not in self.on_labels)
                if NAME_LABEL in self.on_labels:
                    name = ""
        for extra in m.include:
            name, labels = set_label(name, labels, extra, get_label(one.name, one.labels, extra))
        return name, labels

    def __call__(self, lhs: Vector, rhs: Vector) -> Vector:
        if not lhs or not rhs:
            return []
        if len(lhs) == 1 and len(rhs) == 1:
            return self._one_each(lhs[0], rhs[0])
        return self._general(lhs, rhs)

    def _general(self, lhs: Vector, rhs: Vector) -> Vector:
        card = self.matching.card
        if card is Cardinality.ONE_TO_MANY:
            lhs, rhs = rhs, lhs
        sig = self.sig
        one_side: dict[object, Sample] = {}
        for s in rhs:
            key = sig(s)
            if key in one_side:
                raise self._duplicate(s, one_side[key])
            one_side[key] = s
        seen: dict[object, set[tuple[str, Labels]]] = {}
        out: Vector = []
        for s in lhs:
            key = sig(s)
            other = one_side.get(key)
            if other is None:
                continue
            vl, vr = (
                (other.value, s.value)
                if card is Cardinality.ONE_TO_MANY
                else (s.value, other.value)
            )
            value = self._operate(vl, vr)
            if value is None:
                continue
            metric = self._result_metric(s, other)
            done = seen.get(key)
            if card is Cardinality.ONE_TO_ONE:
                if done is not None:
                    raise EvalError(
                        "multiple matches for labels: many-to-one matching must be explicit "
                        "(group_left/group_right)"
                    )
                seen[key] = set()
            else:
                if done is None:
                    done = seen[key] = set()
                elif metric in done:
                    raise EvalError(
                        "multiple matches for labels: grouping labels must ensure unique matches"
                    )
                done.add(metric)
            out.append(Sample(metric[0], metric[1], value))
        check_unique(out)
        return out

    def _one_each(self, left: Sample, right: Sample) -> Vector:
        """What the general path gives for one element on each side (the usual case of a rule
        comparing an engine's series with its threshold): no duplicate can arise, so only the
        match, the operation and the result's labels remain."""
        if self.sig(left) != self.sig(right):
            return []
        value = self._operate(left.value, right.value)
        if value is None:
            return []
        if self.matching.card is Cardinality.ONE_TO_MANY:
            name, labels = self._result_metric(right, left)
        else:
            name, labels = self._result_metric(left, right)
        return [Sample(name, labels, value)]

    def _operate(self, vl: float, vr: float) -> float | None:
        """The result's value for the matched pair (left and right operand values), or None
        when a filtering comparison drops it."""
        if self.cmp is not None:
            kept = self.cmp(vl, vr)
            value = vl
        else:
            assert self.arith is not None
            kept, value = True, self.arith(vl, vr)
        if self.return_bool:
            return 1.0 if kept else 0.0
        return value if kept else None
