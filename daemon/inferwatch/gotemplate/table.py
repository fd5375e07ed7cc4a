"""The one table of template functions: their Go parameter types and implementations.

Go checks argument types against each function's signature, and its messages name them
(``expected string; found 1``, ``wrong type for value; expected *template.sample; got int``), so
every entry says what each parameter is. Functions Go or Prometheus 2.42 have but inferwatch does
not implement are listed in :data:`UNSUPPORTED`: a rule using one is refused at load, by name.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any, Final, NamedTuple
from urllib.parse import urlparse

from inferwatch.gotemplate import builtins as b
from inferwatch.gotemplate import funcs as f
from inferwatch.gotemplate.printf import sprint, sprintf
from inferwatch.gotemplate.values import QueryResult, SafeHTML


class Param(StrEnum):
    ANY = "interface {}"
    STRING = "string"
    SAMPLE = "*template.sample"
    RESULT = "template.queryResult"


class Env:
    """What functions may reach at expansion time: the query engine and the external URL."""

    def __init__(self, query: Callable[[str], QueryResult] | None, external_url: str) -> None:
        self.query = query
        self.external_url = external_url


class Func(NamedTuple):
    params: tuple[Param, ...]
    impl: Callable[..., Any]
    variadic: Param | None = None
    env: bool = False


def _query(env: Env, text: str) -> QueryResult:
    if env.query is None:
        raise b.FuncError("query is not available here")
    return env.query(text)


_A, _S = Param.ANY, Param.STRING

FUNCTIONS: Final[dict[str, Func]] = {
    # Prometheus
    "humanize": Func((_A,), f.humanize),
    "humanize1024": Func((_A,), f.humanize1024),
    "humanizeDuration": Func((_A,), f.humanize_duration),
    "humanizePercentage": Func((_A,), f.humanize_percentage),
    "humanizeTimestamp": Func((_A,), f.humanize_timestamp),
    "title": Func((_S,), f.title),
    "toUpper": Func((_S,), f.to_upper),
    "toLower": Func((_S,), f.to_lower),
    "reReplaceAll": Func((_S, _S, _S), f.re_replace_all),
    "match": Func((_S, _S), f.match),
    "safeHtml": Func((_S,), SafeHTML),
    "parseDuration": Func((_S,), f.parse_duration),
    "query": Func((_S,), _query, env=True),
    "first": Func((Param.RESULT,), f.first),
    "label": Func((_S, Param.SAMPLE), f.label),
    "value": Func((Param.SAMPLE,), f.value),
    "strvalue": Func((Param.SAMPLE,), f.strvalue),
    "sortByLabel": Func((_S, Param.RESULT), f.sort_by_label),
    "graphLink": Func((_S,), lambda e: f.graph_link(e, 0)),
    "tableLink": Func((_S,), lambda e: f.graph_link(e, 1)),
    "externalURL": Func((), lambda env: env.external_url, env=True),
    "pathPrefix": Func((), lambda env: urlparse(env.external_url).path, env=True),
    # Go text/template
    "and": Func((_A,), lambda *a: a[-1], variadic=_A),
    "or": Func((_A,), lambda *a: a[-1], variadic=_A),
    "not": Func((_A,), b.not_),
    "len": Func((_A,), b.length),
    "index": Func((_A,), b.index, variadic=_A),
    "eq": Func((_A,), b.eq, variadic=_A),
    "ne": Func((_A, _A), b.ne),
    "lt": Func((_A, _A), b.lt),
    "le": Func((_A, _A), b.le),
    "gt": Func((_A, _A), b.gt),
    "ge": Func((_A, _A), b.ge),
    "print": Func((), lambda *a: sprint(a), variadic=_A),
    "println": Func((), lambda *a: sprint(a, newline=True), variadic=_A),
    "printf": Func((_S,), lambda fmt, *a: sprintf(fmt, a), variadic=_A),
    "html": Func((), b.html_escape, variadic=_A),
    "urlquery": Func((), b.urlquery, variadic=_A),
}

UNSUPPORTED: Final = frozenset({"slice", "js", "call", "args", "tmpl", "toTime"})
"""Known to Go 1.19 or Prometheus 2.42, not implemented by inferwatch."""
