"""Alertmanager's matcher syntax, parsed into :class:`~inferwatch.labels.Matcher`.

Routes, inhibit rules, silences and maintenance files all name alerts with the strings users
already write for Alertmanager (``severity="critical"``, ``engine=~"main|aux"``, ``gpu!=3``), so
one config works for both. Parsing happens once, at config load, and every error names the text
and the column so ``inferwatch check`` can point at the mistake.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from inferwatch.labels import Labels, Matcher, MatchOp, label_value
from inferwatch.regexp import RegexError

_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_OPS = ("=~", "!~", "!=", "=")  # two-character operators first
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t"}


class MatcherError(ValueError):
    """A matcher string that cannot be parsed; the message names the text and the column."""


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> MatcherError:
        return MatcherError(f"invalid matcher {self.text!r} at column {self.pos + 1}: {what}")

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def name(self) -> str:
        m = _NAME.match(self.text, self.pos)
        if m is None:
            raise self.fail("expected a label name")
        self.pos = m.end()
        return m.group()

    def op(self) -> str:
        for op in _OPS:
            if self.text.startswith(op, self.pos):
                self.pos += len(op)
                return op
        raise self.fail("expected one of =, !=, =~, !~")

    def value(self) -> str:
        if self.peek() == '"':
            return self.quoted()
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in ',}"':
            self.pos += 1
        if self.peek() == '"':
            raise self.fail("unexpected quote inside an unquoted value")
        return self.text[start : self.pos].strip()

    def quoted(self) -> str:
        self.pos += 1
        out: list[str] = []
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            self.pos += 1
            if ch == '"':
                return "".join(out)
            if ch == "\\":
                esc = self.peek()
                if esc not in _ESCAPES:
                    raise self.fail(f"unknown escape \\{esc}")
                out.append(_ESCAPES[esc])
                self.pos += 1
            else:
                out.append(ch)
        raise self.fail("unterminated quoted value")

    def matcher(self) -> Matcher:
        self.skip_space()
        name = self.name()
        self.skip_space()
        op = self.op()
        self.skip_space()
        value = self.value()
        try:
            return Matcher.of(name, op, value)
        except RegexError as exc:
            raise MatcherError(f"invalid regex in matcher {self.text!r}: {exc}") from None


def parse_matchers(text: str) -> tuple[Matcher, ...]:
    """One matcher, a comma-separated list, or a braced list ``{a="b", c=~"d"}``.

    An empty string or ``{}`` is an empty list (it matches everything)."""
    sc = _Scanner(text)
    sc.skip_space()
    braced = sc.peek() == "{"
    if braced:
        sc.pos += 1
    out: list[Matcher] = []
    while True:
        sc.skip_space()
        if sc.peek() in ("", "}") and not out:
            break
        out.append(sc.matcher())
        sc.skip_space()
        if sc.peek() != ",":
            break
        sc.pos += 1
        sc.skip_space()
        if sc.peek() in ("", "}"):
            break  # a trailing comma is allowed, as in Alertmanager
    if braced:
        if sc.peek() != "}":
            raise sc.fail("expected , or }")
        sc.pos += 1
        sc.skip_space()
    if sc.pos != len(text):
        raise sc.fail("unexpected text after the matcher")
    return tuple(out)


def parse_matcher(text: str) -> Matcher:
    """Exactly one matcher."""
    found = parse_matchers(text)
    if len(found) != 1:
        raise MatcherError(f"invalid matcher {text!r}: expected exactly one matcher")
    return found[0]


def parse_list(items: Iterable[str]) -> tuple[Matcher, ...]:
    """A config list (``matchers: [...]``); an item may itself be a list, as in Alertmanager."""
    out: list[Matcher] = []
    for item in items:
        out.extend(parse_matchers(item))
    return tuple(out)


def matches(matchers: Iterable[Matcher], labels: Labels) -> bool:
    """All matchers hold; an absent label is the empty string (``gpu=""`` matches no ``gpu``)."""
    return all(m.matches(label_value(labels, m.name)) for m in matchers)


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def format_matchers(matchers: Iterable[Matcher]) -> str:
    """The canonical braced form, as Alertmanager prints route keys (``{severity="critical"}``)."""
    return "{" + ",".join(f"{m.name}{m.op.value}{_quote(m.value)}" for m in matchers) + "}"


__all__ = [
    "MatchOp",
    "MatcherError",
    "format_matchers",
    "matches",
    "parse_list",
    "parse_matcher",
    "parse_matchers",
]
