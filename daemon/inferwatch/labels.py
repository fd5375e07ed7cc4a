"""Label sets and matchers, as Prometheus defines them.

A label set is a tuple of ``(name, value)`` pairs sorted by name, without ``__name__`` and without
empty values (in Prometheus an empty label value is the same as an absent label).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from inferwatch import regexp

Labels = tuple[tuple[str, str], ...]
NAME_LABEL = "__name__"
_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")

EMPTY: Labels = ()


def make_labels(pairs: Mapping[str, str] | Iterable[tuple[str, str]] | None = None) -> Labels:
    """Normalise a mapping or pairs into a sorted label tuple, dropping empty values."""
    if pairs is None:
        return EMPTY
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    return tuple(sorted((k, str(v)) for k, v in items if v != "" and k != NAME_LABEL))


def valid_metric_name(name: str) -> bool:
    return bool(_METRIC_NAME.match(name))


def valid_label_name(name: str) -> bool:
    return bool(_LABEL_NAME.match(name)) and not name.startswith("__")


class MatchOp(StrEnum):
    EQ = "="
    NE = "!="
    RE = "=~"
    NRE = "!~"


@dataclass(frozen=True, slots=True)
class Matcher:
    """One label matcher; ``name`` may be ``__name__``."""

    name: str
    op: MatchOp
    value: str
    _regex: regexp.Regexp | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, name: str, op: str, value: str) -> Matcher:
        """Raises :class:`~inferwatch.regexp.RegexError` for a regex RE2 refuses. A regex
        matches the whole value (anchored, as in Alertmanager), ``.`` a newline too."""
        mop = MatchOp(op)
        regex = regexp.compile(value, dot_nl=True) if mop in (MatchOp.RE, MatchOp.NRE) else None
        return cls(name, mop, value, regex)

    def matches(self, value: str) -> bool:
        """Match a label value; an absent label matches as the empty string."""
        if self.op is MatchOp.EQ:
            return value == self.value
        if self.op is MatchOp.NE:
            return value != self.value
        assert self._regex is not None
        hit = self._regex.matches(value)
        return hit if self.op is MatchOp.RE else not hit


def label_value(labels: Labels, name: str) -> str:
    for k, v in labels:
        if k == name:
            return v
    return ""
