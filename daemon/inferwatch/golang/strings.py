"""Go's string functions as Prometheus uses them: ``strconv.Quote`` and ``Regexp.ExpandString``."""

from __future__ import annotations

from typing import Any, Protocol

_GO_ESCAPES = {"\a": r"\a", "\b": r"\b", "\f": r"\f", "\n": r"\n", "\r": r"\r", "\t": r"\t"}
_GO_ESCAPES |= {"\v": r"\v", "\\": r"\\", '"': r"\""}


def go_quote(s: str) -> str:
    """Go's ``strconv.Quote`` (what ``%q`` prints): C escapes, ``\\xHH``/``\\uHHHH`` otherwise."""
    out: list[str] = []
    for c in s:
        if c in _GO_ESCAPES:
            out.append(_GO_ESCAPES[c])
        elif c.isprintable():
            out.append(c)
        elif ord(c) < 0x80:
            out.append(f"\\x{ord(c):02x}")
        elif ord(c) < 0x10000:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    return '"' + "".join(out) + '"'


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


class _Match(Protocol):
    """A match of Python's ``re`` or of RE2 (``inferwatch.regexp``)."""

    @property
    def re(self) -> Any: ...
    def group(self, index: int, /) -> str | Any: ...


def expand(template: str, match: _Match) -> str:
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
