"""Tokens of a Go text/template: text between actions, and the words inside ``{{ … }}``.

Written from Go's documented template syntax: ``{{- `` / `` -}}`` trim the whitespace next to an
action, ``{{/* … */}}`` is a comment, actions may span lines, and inside an action come fields
(``.A``), variables (``$x``), identifiers, keywords, strings (interpreted, raw, character),
numbers, ``|``, ``(``, ``)``, ``:=``, ``=`` and ``,``. A lexing problem raises
:class:`TemplateSyntaxError` with the character offset of the offending token.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import NamedTuple

KEYWORDS = frozenset(
    {"block", "break", "continue", "define", "else", "end", "if", "range", "template", "with"}
)
_SPACE = " \t\r\n"
_WORD = re.compile(r"\w*")  # Go: letters and digits in any script, and "_"
_NUMBER = re.compile(
    r"[+-]?(?:0[xX][0-9a-fA-F_]*(?:\.[0-9a-fA-F_]*)?(?:[pP][+-]?[0-9_]+)?"
    r"|0[oObB][0-7_]+"
    r"|(?:[0-9][0-9_]*)?\.?[0-9_]*(?:[eE][+-]?[0-9_]+)?)i?"
)


class TemplateSyntaxError(Exception):
    """A template that does not parse; ``pos`` is a character offset in the full text."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


class Kind(StrEnum):
    TEXT = "text"
    LEFT = "{{"
    RIGHT = "}}"
    SPACE = "space"
    FIELD = "field"
    DOT = "."
    VARIABLE = "variable"
    IDENTIFIER = "identifier"
    KEYWORD = "keyword"
    BOOL = "bool"
    NIL = "nil"
    NUMBER = "number"
    STRING = "string"
    RAW_STRING = "raw string"
    CHAR = "character constant"
    PIPE = "|"
    LPAREN = "("
    RPAREN = ")"
    DECLARE = ":="
    ASSIGN = "="
    COMMA = ","
    EOF = "EOF"


class Token(NamedTuple):
    kind: Kind
    pos: int
    text: str


def _at_right(text: str, i: int) -> tuple[bool, int]:
    """(is a closing delimiter here, its length): ``}}`` or the trimming `` -}}``."""
    if text.startswith("}}", i):
        return True, 2
    if i < len(text) and text[i] in _SPACE and text.startswith("-}}", i + 1):
        return True, 4
    return False, 0


def tokenize(text: str, begin: int = 0) -> list[Token]:
    """The whole template as tokens; comments are dropped, trim markers applied to the text.
    ``begin``: lex from there on (the end of an action that trims nothing after it)."""
    out: list[Token] = []
    i = begin
    trim_next = False
    while i < len(text):
        start = text.find("{{", i)
        end = len(text) if start < 0 else start
        chunk = text[i:end]
        left_trim = start >= 0 and text.startswith("-", start + 2) and _trim_space(text, start + 3)
        if trim_next:
            chunk, i = chunk.lstrip(_SPACE), i + len(chunk) - len(chunk.lstrip(_SPACE))
        if left_trim:
            chunk = chunk.rstrip(_SPACE)
        if chunk:
            out.append(Token(Kind.TEXT, i, chunk))
        if start < 0:
            break
        i, trim_next = _action(text, start, left_trim, out)
    out.append(Token(Kind.EOF, len(text), ""))
    return out


def _trim_space(text: str, i: int) -> bool:
    return i < len(text) and text[i] in _SPACE


def _action(text: str, start: int, left_trim: bool, out: list[Token]) -> tuple[int, bool]:
    """Lex one action from its ``{{``; returns (offset after it, whether it trims after)."""
    i = start + (4 if left_trim else 2)
    if text.startswith("/*", i):
        close = text.find("*/", i + 2)
        if close < 0:
            raise TemplateSyntaxError("unclosed comment", start)
        is_right, width = _at_right(text, close + 2)
        if not is_right:
            raise TemplateSyntaxError("comment ends before closing delimiter", close)
        return close + 2 + width, width == 4
    out.append(Token(Kind.LEFT, start, "{{"))
    depth = 0
    while True:
        if i >= len(text):
            raise TemplateSyntaxError("unclosed action", len(text))
        is_right, width = _at_right(text, i)
        if is_right:
            if depth:
                raise TemplateSyntaxError("unclosed left paren", i)
            out.append(Token(Kind.RIGHT, i, "}}"))
            return i + width, width == 4
        c = text[i]
        if c in _SPACE:
            j = i
            while j < len(text) and text[j] in _SPACE and not _at_right(text, j)[0]:
                j += 1
            out.append(Token(Kind.SPACE, i, text[i:j]))
            i = j
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                raise TemplateSyntaxError(f"unexpected right paren {_rune(c)}", i)
        i = _word(text, i, out)


def _rune(c: str) -> str:
    return f"U+{ord(c):04X} '{c}'"


_SINGLE = {"|": Kind.PIPE, "(": Kind.LPAREN, ")": Kind.RPAREN, ",": Kind.COMMA, "=": Kind.ASSIGN}
_TERMINATORS = _SPACE + ".,|:()"


def _terminated(text: str, i: int) -> bool:
    return i >= len(text) or text[i] in _TERMINATORS or _at_right(text, i)[0]


def _word(text: str, i: int, out: list[Token]) -> int:
    c = text[i]
    if c in _SINGLE:
        out.append(Token(_SINGLE[c], i, c))
        return i + 1
    if text.startswith(":=", i):
        out.append(Token(Kind.DECLARE, i, ":="))
        return i + 2
    if c == '"':
        return _quoted(text, i, out)
    if c == "`":
        close = text.find("`", i + 1)
        if close < 0:
            raise TemplateSyntaxError("unterminated raw quoted string", i)
        out.append(Token(Kind.RAW_STRING, i, text[i : close + 1]))
        return close + 1
    if c == "'":
        return _char(text, i, out)
    if c in "$." and not (c == "." and i + 1 < len(text) and text[i + 1].isdigit()):
        word = _WORD.match(text, i + 1)
        assert word is not None
        j = word.end()
        if not _terminated(text, j):
            raise TemplateSyntaxError(f"bad character {_rune(text[j])}", j)
        if c == "$":
            out.append(Token(Kind.VARIABLE, i, text[i:j]))
        else:
            out.append(Token(Kind.FIELD if j > i + 1 else Kind.DOT, i, text[i:j]))
        return j
    if c.isdigit() or c in "+-.":
        number = _NUMBER.match(text, i)
        assert number is not None
        j = max(number.end(), i + 1)
        if j < len(text) and (text[j].isalnum() or text[j] == "_"):
            raise TemplateSyntaxError(f"bad number syntax: {text[i : j + 1]!r}", i)
        out.append(Token(Kind.NUMBER, i, text[i:j]))
        return j
    if c.isalpha() or c == "_":
        word = _WORD.match(text, i)
        assert word is not None
        j = max(word.end(), i + 1)
        name = text[i:j]
        if name in KEYWORDS:
            kind = Kind.KEYWORD
        elif name in ("true", "false"):
            kind = Kind.BOOL
        elif name == "nil":
            kind = Kind.NIL
        else:
            kind = Kind.IDENTIFIER
        out.append(Token(kind, i, name))
        return j
    raise TemplateSyntaxError(f"unrecognized character in action: {_rune(c)}", i)


def _quoted(text: str, i: int, out: list[Token]) -> int:
    j = i + 1
    while True:
        if j >= len(text) or text[j] == "\n":
            raise TemplateSyntaxError("unterminated quoted string", i)
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == '"':
            out.append(Token(Kind.STRING, i, text[i : j + 1]))
            return j + 1
        j += 1


def _char(text: str, i: int, out: list[Token]) -> int:
    j = i + 1
    while True:
        if j >= len(text) or text[j] == "\n":
            raise TemplateSyntaxError("unterminated character constant", i)
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == "'":
            out.append(Token(Kind.CHAR, i, text[i : j + 1]))
            return j + 1
        j += 1
