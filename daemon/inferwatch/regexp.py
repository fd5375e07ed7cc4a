"""Regular expressions with Go's meaning: RE2 (google-re2), as Prometheus and Alertmanager use.

RE2 matches in time linear in the text, whatever the pattern: ``(a+)+$`` against a long line of
``a`` costs a pass over it, where a backtracking engine (Python's ``re``) takes forever. The
price is what RE2 refuses, as Go does: backreferences (``\\1``), lookarounds (``(?=``,
``(?<!``), atomic groups and possessive quantifiers; :func:`compile` raises :class:`RegexError`
for them, with RE2's own words, so a rule file is rejected when it is loaded.

RE2's classes are ASCII (``\\d``, ``\\w``, ``\\s``, ``\\b``); ``.`` matches a newline only with
``dot_nl`` (or ``(?s)``); ``$`` without ``(?m)`` is the end of the text, never before a final
newline. A pattern's truth on a label value is memoised (label values repeat at every
evaluation, and a call through the binding costs microseconds).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any, Protocol

import re2

__all__ = ["Match", "RegexError", "Regexp", "compile"]

_MEMO_SIZE = 1024  # values remembered per pattern
_MEMO_VALUE_MAX = 256  # longer values are matched every time (and never kept)


class RegexError(ValueError):
    """RE2 refuses the pattern (message: RE2's reason)."""


class Match(Protocol):
    """What callers use of a match (Python's ``re.Match`` and re2's both have it)."""

    @property
    def re(self) -> Any: ...
    def group(self, index: int | str = 0, /) -> str | Any: ...
    def start(self, group: int = 0, /) -> int: ...
    def end(self, group: int = 0, /) -> int: ...


def _options(dot_nl: bool) -> Any:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is our error to report, not RE2's to log
    options.dot_nl = dot_nl
    return options


class Regexp:
    """A compiled RE2 pattern (use :func:`compile`)."""

    __slots__ = ("_memo", "_re", "pattern")

    def __init__(self, pattern: str, dot_nl: bool = False) -> None:
        self.pattern = pattern
        try:
            self._re: Any = re2.compile(pattern, _options(dot_nl))
        except re2.error as exc:
            reason = exc.args[0] if exc.args else "invalid"
            if isinstance(reason, bytes):
                reason = reason.decode("utf-8", "replace")
            raise RegexError(str(reason)) from None
        except (TypeError, UnicodeError) as exc:  # a lone surrogate, say
            raise RegexError(str(exc)) from None
        self._memo: dict[str, bool] = {}

    @property
    def groups(self) -> int:
        return int(self._re.groups)

    @property
    def groupindex(self) -> dict[str, int]:
        return dict(self._re.groupindex)

    def fullmatch(self, text: str) -> Match | None:
        return self._re.fullmatch(text)  # type: ignore[no-any-return]

    def search(self, text: str) -> Match | None:
        return self._re.search(text)  # type: ignore[no-any-return]

    def finditer(self, text: str) -> Iterator[Match]:
        """Successive non-overlapping matches, one pass over the text (an empty match moves on
        by one character, as Go's loops do)."""
        return self._re.finditer(text)  # type: ignore[no-any-return]

    def matches(self, text: str) -> bool:
        """Whether the whole of ``text`` matches (Prometheus anchors label regexes)."""
        memo = self._memo
        hit = memo.get(text)
        if hit is None:
            try:
                hit = self._re.fullmatch(text) is not None
            except UnicodeError:  # a value holding a lone surrogate: not a UTF-8 string
                hit = False
            if len(text) <= _MEMO_VALUE_MAX:
                if len(memo) >= _MEMO_SIZE:
                    memo.clear()
                memo[text] = hit
        return hit


@lru_cache(maxsize=4096)
def compile(pattern: str, dot_nl: bool = False) -> Regexp:
    """``pattern`` compiled once (cached); raises :class:`RegexError` where RE2 refuses it."""
    return Regexp(pattern, dot_nl)
