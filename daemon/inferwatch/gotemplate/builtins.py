"""Go text/template's own functions: comparisons, ``not``, ``len``, ``index``, ``print…``.

Comparisons are Go's, strict about types: ``eq 1 1.0`` fails ("incompatible types for
comparison"), ``lt true false`` fails ("invalid type for comparison"), ``le``/``gt``/``ge`` are
built from ``lt`` and ``eq`` (so ``gt NaN 1`` is true, as in Go). ``and``/``or`` short-circuit and
live in the executor because they need unevaluated arguments.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from urllib.parse import quote_plus

from inferwatch.gotemplate.printf import sprint
from inferwatch.gotemplate.values import (
    GoValue,
    QueryResult,
    QuerySample,
    TemplateData,
    truth,
    type_name,
)


class FuncError(Exception):
    """A function failed: Go reports it as ``error calling NAME: MESSAGE``."""


def _kind(v: object) -> str | None:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "string"
    return None


def eq(a: GoValue, *others: GoValue) -> bool:
    if not others:
        raise FuncError("missing argument for comparison")
    ka = _kind(a)
    for b in others:
        kb = _kind(b)
        if ka != kb:
            if a is not None and b is not None:
                raise FuncError("incompatible types for comparison")
            continue
        if ka is None:
            if isinstance(a, Mapping | QueryResult) and type(a) is type(b):
                raise FuncError(f"non-comparable type {type_name(a)}")
            if a is b or (a is None and b is None):
                return True
            continue
        if a == b:
            return True
    return False


def ne(a: GoValue, b: GoValue) -> bool:
    return not eq(a, b)


def lt(a: GoValue, b: GoValue) -> bool:
    ka, kb = _kind(a), _kind(b)
    if ka is None or kb is None:
        raise FuncError("invalid type for comparison")
    if ka != kb:
        raise FuncError("incompatible types for comparison")
    if ka == "bool":
        raise FuncError("invalid type for comparison")
    assert isinstance(a, int | float | str) and isinstance(b, int | float | str)
    return a < b  # type: ignore[operator]  # same kind, checked above


def le(a: GoValue, b: GoValue) -> bool:
    return lt(a, b) or eq(a, b)


def gt(a: GoValue, b: GoValue) -> bool:
    return not le(a, b)


def ge(a: GoValue, b: GoValue) -> bool:
    return not lt(a, b)


def not_(a: GoValue) -> bool:
    return not truth(a)


def length(item: GoValue) -> int:
    if item is None:
        raise FuncError("len of nil pointer")
    if isinstance(item, str):
        return len(item.encode())
    if isinstance(item, Mapping | QueryResult):
        return len(item)
    raise FuncError(f"len of type {type_name(item)}")


def _slice_index(index: GoValue, size: int) -> int:
    if index is None:
        raise FuncError("cannot index slice/array with nil")
    if not isinstance(index, int) or isinstance(index, bool):
        raise FuncError(f"cannot index slice/array with type {type_name(index)}")
    if index < 0 or index >= size:
        raise FuncError(f"index out of range: {index}")
    return index


def index(item: GoValue, *indexes: GoValue) -> GoValue:
    if item is None:
        raise FuncError("index of untyped nil")
    for key in indexes:
        if isinstance(item, str):
            item = item.encode()[_slice_index(key, len(item.encode()))]
        elif isinstance(item, QueryResult):
            item = item[_slice_index(key, len(item))]
        elif isinstance(item, Mapping) and not isinstance(item, TemplateData):
            if not isinstance(key, str):
                raise FuncError(f"value has type {type_name(key)}; should be string")
            item = item.get(key, "")
        else:
            raise FuncError(f"can't index item of type {_indexed_type(item)}")
    return item


def _indexed_type(item: GoValue) -> str:
    return "template.sample" if isinstance(item, QuerySample) else type_name(item)


def _joined(args: tuple[GoValue, ...]) -> str:
    if len(args) == 1 and isinstance(args[0], str):
        return args[0]
    return sprint(args)


def html_escape(*args: GoValue) -> str:
    return html.escape(_joined(args)).replace("&#x27;", "&#39;").replace("&quot;", "&#34;")


def urlquery(*args: GoValue) -> str:
    return quote_plus(_joined(args), safe="")
