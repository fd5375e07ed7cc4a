"""``label_replace``, ``label_join`` and ``absent``'s label rule.

Their arguments are string literals, so everything that can fail (an invalid regex or label name)
fails when the rule is loaded. Replacement templates follow Go's ``Regexp.Expand``, not Python's
``re.sub``: ``$1x`` names group "1x" (and expands to ""), which is a classic trap (promql.md §6).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from inferwatch.labels import NAME_LABEL, Labels, MatchOp
from inferwatch.promql.ast import LabelMatcher, compile_regex
from inferwatch.promql.types import PromQLError, Sample, Vector, get_label, set_label

_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def _name_char(c: str) -> bool:
    return c.isalpha() or c.isdigit() or c == "_"


def _template_ref(text: str) -> tuple[str, str] | None:
    """Parse the name after a ``$``: ``(name, rest)``, or None when malformed (Go's extract)."""
    brace = text.startswith("{")
    body = text[1:] if brace else text
    i = 0
    while i < len(body) and _name_char(body[i]):
        i += 1
    if i == 0:
        return None
    name = body[:i]
    if brace:
        if i >= len(body) or body[i] != "}":
            return None
        i += 1
    return name, body[i:]


def _group_number(name: str) -> int | None:
    if not name.isascii() or not name.isdigit() or (name[0] == "0" and len(name) > 1):
        return None
    return int(name) if len(name) < 10 else None


def expand(template: str, match: re.Match[str]) -> str:
    """Go's ``Regexp.ExpandString`` over a match: ``$1``, ``${1}``, ``$name``, ``$$``."""
    out: list[str] = []
    rest = template
    while True:
        before, sep, after = rest.partition("$")
        out.append(before)
        if not sep:
            break
        if after.startswith("$"):
            out.append("$")
            rest = after[1:]
            continue
        ref = _template_ref(after)
        if ref is None:
            out.append("$")
            rest = after
            continue
        name, rest = ref
        number = _group_number(name)
        group: int | None = number
        if number is None:
            group = match.re.groupindex.get(name)
        if group is not None and group <= match.re.groups:
            value = match.group(group)
            if value is not None:
                out.append(value)
    return "".join(out)


def label_replacer(dst: str, repl: str, src: str, regex: str) -> Callable[[Vector], Vector]:
    """The per-vector work of ``label_replace(v, dst, repl, src, regex)``."""
    try:
        pattern = compile_regex(regex)
    except PromQLError:
        raise PromQLError(f"invalid regular expression in label_replace(): {regex}") from None
    if not _LABEL_NAME.fullmatch(dst):
        raise PromQLError(f"invalid destination label name in label_replace(): {dst}")
    memo: dict[tuple[str, Labels], tuple[str, Labels]] = {}

    def run(vec: Vector) -> Vector:
        out: Vector = []
        for s in vec:
            key = (s.name, s.labels)
            result = memo.get(key)
            if result is None:
                m = pattern.fullmatch(get_label(s.name, s.labels, src))
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
