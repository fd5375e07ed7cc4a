"""``label_replace``, ``label_join`` and ``absent``'s label rule.

Their arguments are string literals, so everything that can fail (an invalid regex or label name)
fails when the rule is loaded. Replacement templates follow Go's ``Regexp.Expand``, not Python's
``re.sub``: ``$1x`` names group "1x" (and expands to ""), which is a classic trap (promql.md §6).
The regex is RE2's (linear time): a catastrophic pattern costs one pass over each value.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from inferwatch import regexp
from inferwatch.golang.strings import expand
from inferwatch.labels import NAME_LABEL, Labels, MatchOp
from inferwatch.promql.ast import LabelMatcher
from inferwatch.promql.types import PromQLError, Sample, Vector, get_label, set_label

_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def label_replacer(dst: str, repl: str, src: str, regex: str) -> Callable[[Vector], Vector]:
    """The per-vector work of ``label_replace(v, dst, repl, src, regex)``."""
    try:
        pattern = regexp.compile(regex)
    except regexp.RegexError as exc:
        message = f"invalid regular expression in label_replace(): {regex}"
        raise PromQLError(f"{message} (RE2: {exc})") from None
    if not _LABEL_NAME.fullmatch(dst):
        raise PromQLError(f"invalid destination label name in label_replace(): {dst}")
    memo: dict[tuple[str, Labels], tuple[str, Labels]] = {}

    def run(vec: Vector) -> Vector:
        out: Vector = []
        for s in vec:
            key = (s.name, s.labels)
            result = memo.get(key)
            if result is None:
                try:
                    m = pattern.fullmatch(get_label(s.name, s.labels, src))
                except UnicodeError:  # a value with a lone surrogate matches nothing
                    m = None
                result = key if m is None else set_label(s.name, s.labels, dst, expand(repl, m))
                if len(memo) > 10_000:
                    memo.clear()
                memo[key] = result
            out.append(Sample(result[0], result[1], s.value))
        return out

    return run


def label_joiner(dst: str, sep: str, srcs: tuple[str, ...]) -> Callable[[Vector], Vector]:
    """The per-vector work of ``label_join(v, dst, sep, src…)``."""
    for src in srcs:
        if not _LABEL_NAME.fullmatch(src):
            raise PromQLError(f"invalid source label name in label_join(): {src}")
    if not _LABEL_NAME.fullmatch(dst):
        raise PromQLError(f"invalid destination label name in label_join(): {dst}")

    def run(vec: Vector) -> Vector:
        out: Vector = []
        for s in vec:
            joined = sep.join(get_label(s.name, s.labels, src) for src in srcs)
            name, labels = set_label(s.name, s.labels, dst, joined)
            out.append(Sample(name, labels, s.value))
        return out

    return run


def absent_labels(matchers: tuple[LabelMatcher, ...]) -> Labels:
    """``absent()``'s labels: each ``=`` matcher's, in order, but a name is dropped when any
    matcher *after* its ``=`` names it again. Order matters (checked against promtool 2.42):
    ``{i=~"a", i="b"}`` gives ``{i="b"}``, ``{i="b", i=~"a"}`` gives ``{}``, and ``a=""``
    counts as set (so ``{a="", a="2"}`` gives ``{}``)."""
    chosen: dict[str, str] = {}
    dropped: set[str] = set()
    for m in matchers:
        if m.name == NAME_LABEL:
            continue
        if m.op is MatchOp.EQ and m.name not in chosen:
            chosen[m.name] = m.value
        elif m.name in chosen:
            dropped.add(m.name)
    return tuple(sorted((k, v) for k, v in chosen.items() if k not in dropped and v))
