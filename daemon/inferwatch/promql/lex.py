"""A lexical pass over PromQL source before ``promql-parser`` sees it.

``promql-parser`` follows Prometheus 2.45+ and accepts some text that Prometheus 2.42 (our parity
target, reference/promql.md §11) rejects, and it rejects one thing 2.42 accepts. The parser's AST
cannot tell these apart afterwards (``1m`` and ``60`` both become the number 60), so this pass
looks at the tokens:

- backtick raw strings are rewritten as double-quoted strings (the parser refuses ``\\`` in them);
- a duration used as a number (``1m`` outside a range, subquery step or offset), a bare number
  where 2.42 wants a duration (``x[90]``, ``offset 60``), ``offset +1m`` and a quoted label name
  (``{"job"="a"}``) are refused with a :class:`PromQLError` naming them.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from inferwatch.promql.types import PromQLError

_DURATION = re.compile(r"(?:[0-9]+(?:ms|[smhdwy]))+(?![A-Za-z0-9_.])")
_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_IDENT = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_SPACE = re.compile(r"\s+|#[^\n]*")


class _Token(NamedTuple):
    kind: str  # "dur", "num", "ident", "str", or the punctuation character itself
    text: str
    pos: int


def _scan_string(src: str, i: int) -> int:
    """Index just past the quoted string starting at ``src[i]``."""
    quote = src[i]
    j = i + 1
    while j < len(src):
        c = src[j]
        if c == "\\" and quote != "`":
            j += 2
            continue
        if c == quote:
            return j + 1
        j += 1
    raise PromQLError(f"1:{i + 1}: parse error: unterminated quoted string")


def _tokens(src: str) -> list[_Token]:
    out: list[_Token] = []
    i = 0
    n = len(src)
    while i < n:
        m = _SPACE.match(src, i)
        if m:
            i = m.end()
            continue
        c = src[i]
        if c in "\"'`":
            j = _scan_string(src, i)
            out.append(_Token("str", src[i:j], i))
            i = j
            continue
        m = _DURATION.match(src, i)
        if m:
            out.append(_Token("dur", m.group(), i))
            i = m.end()
            continue
        if c.isdigit() or (c == "." and i + 1 < n and src[i + 1].isdigit()):
            m = _NUMBER.match(src, i)
            if m:
                out.append(_Token("num", m.group(), i))
                i = m.end()
                continue
        m = _IDENT.match(src, i)
        if m:
            out.append(_Token("ident", m.group(), i))
            i = m.end()
            continue
        out.append(_Token(c, c, i))
        i += 1
    return out


def _is_offset(tok: _Token) -> bool:
    return tok.kind == "ident" and tok.text.lower() == "offset"


def _duration_allowed(tokens: list[_Token], k: int, bracket_depth: int) -> bool:
    """Whether token ``k`` stands where 2.42's grammar takes a duration."""
    prev = tokens[k - 1] if k > 0 else None
    if prev is None:
        return False
    if prev.kind == "[" or (prev.kind == ":" and bracket_depth > 0):
        return True
    return _is_offset(prev) or (prev.kind == "-" and k > 1 and _is_offset(tokens[k - 2]))


def _raw_to_quoted(text: str) -> str:
    body = text[1:-1].replace("\\", "\\\\").replace('"', '\\"')
    return f'"{body}"'


def prepare(src: str) -> str:
    """Check ``src`` for 2.42-only syntax and return the text to hand to ``promql-parser``."""
    tokens = _tokens(src)
    bracket_depth = 0
    brace_depth = 0
    pieces: list[str] = []
    last = 0
    for k, tok in enumerate(tokens):
        if tok.kind == "[":
            bracket_depth += 1
        elif tok.kind == "]":
            bracket_depth = max(0, bracket_depth - 1)
        elif tok.kind == "{":
            brace_depth += 1
        elif tok.kind == "}":
            brace_depth = max(0, brace_depth - 1)
        elif tok.kind == "+" and k > 0 and _is_offset(tokens[k - 1]):
            raise PromQLError(f"1:{tok.pos + 1}: parse error: unexpected '+' after offset")
        elif tok.kind == "dur":
            if not _duration_allowed(tokens, k, bracket_depth):
                raise PromQLError(
                    f"1:{tok.pos + 1}: parse error: unexpected duration {tok.text!r} "
                    "(durations are not numbers in Prometheus 2.42)"
                )
        elif tok.kind == "num":
            if _duration_allowed(tokens, k, bracket_depth):
                raise PromQLError(
                    f"1:{tok.pos + 1}: parse error: unexpected number {tok.text!r}: "
                    "a range, step or offset needs a unit (e.g. 90s)"
                )
        elif tok.kind == "str":
            prev = tokens[k - 1] if k > 0 else None
            if brace_depth > 0 and prev is not None and prev.kind in "{,":
                raise PromQLError(
                    f"1:{tok.pos + 1}: parse error: unexpected string {tok.text} in label "
                    "matching (quoted label names need Prometheus 3)"
                )
            if tok.text.startswith("`"):
                pieces.append(src[last : tok.pos])
                pieces.append(_raw_to_quoted(tok.text))
                last = tok.pos + len(tok.text)
    if not pieces:
        return src
    pieces.append(src[last:])
    return "".join(pieces)
