"""The Go values a Prometheus template works with, as Python values, and how Go prints them.

Go is typed where Python is not, and templates show it: ``gt $value 1`` fails because ``$value``
is a float64 and ``1`` an int, and ``printf "%d" 1.5`` prints ``%!d(float64=1.5)``. The mapping:
float64 ↔ ``float``, int ↔ ``int`` (never ``bool``), string ↔ ``str``, bool ↔ ``bool``, nil ↔
``None``, ``map[string]string`` ↔ a ``Mapping``, Prometheus's ``*sample`` ↔ :class:`QuerySample`,
its ``queryResult`` ↔ :class:`QueryResult`, the template data struct ↔ :class:`TemplateData`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from inferwatch.golang.floats import format_go_v


@dataclass(frozen=True, slots=True)
class QuerySample:
    """One element of a template ``query`` result: ``.Labels`` (with ``__name__``), ``.Value``."""

    labels: Mapping[str, str]
    value: float


class QueryResult(tuple[QuerySample, ...]):
    """What ``query`` returns: samples in the engine's order."""

    __slots__ = ()


class SafeHTML(str):
    """``safeHtml``'s result (Go's ``html/template.HTML``): prints as the string it holds."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class TemplateData:
    """The template's dot: ``.Labels``, ``.ExternalLabels``, ``.ExternalURL``, ``.Value``."""

    labels: Mapping[str, str]
    external_labels: Mapping[str, str]
    external_url: str
    value: float


GoValue = (
    float | int | str | bool | None | Mapping[str, str] | QuerySample | QueryResult | TemplateData
)

DATA_TYPE_NAME = (
    "struct { Labels map[string]string; ExternalLabels map[string]string; "
    "ExternalURL string; Value float64 }"
)


def type_name(v: object) -> str:
    """Go's ``%T`` of the value."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float64"
    if isinstance(v, SafeHTML):
        return "template.HTML"
    if isinstance(v, str):
        return "string"
    if isinstance(v, QuerySample):
        return "*template.sample"
    if isinstance(v, QueryResult):
        return "template.queryResult"
    if isinstance(v, TemplateData):
        return DATA_TYPE_NAME
    if isinstance(v, Mapping):
        return "map[string]string"
    return type(v).__name__


def print_value(v: object, pointer: bool = False) -> str:
    """``fmt.Sprint(v)``; text/template dereferences a pointer first (``pointer`` False)."""
    if v is None:
        return "<nil>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return format_go_v(v)
    if isinstance(v, int | str):
        return str(v)
    if isinstance(v, QuerySample):
        body = "{" + print_value(v.labels) + " " + print_value(v.value) + "}"
        return "&" + body if pointer else body
    if isinstance(v, QueryResult):
        return "[" + " ".join(print_value(s, True) for s in v) + "]"
    if isinstance(v, TemplateData):
        parts = (v.labels, v.external_labels, v.external_url, v.value)
        return "{" + " ".join(print_value(p) for p in parts) + "}"
    if isinstance(v, Mapping):
        return "map[" + " ".join(f"{k}:{v[k]}" for k in sorted(v)) + "]"
    return str(v)


def truth(v: object) -> bool:
    """Go template truth: zero values, nil and empty collections are false."""
    if v is None:
        return False
    if isinstance(v, bool):
        return v
    if isinstance(v, int | float):
        return v != 0  # NaN is not zero: true, as in Go
    if isinstance(v, str | Mapping | QueryResult):
        return len(v) > 0
    return True
