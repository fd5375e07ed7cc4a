"""Prometheus's template functions: humanizing numbers, strings, regexes and query results.

Outputs follow reference/promql.md §8, which records what promtool 2.42 printed: ``humanize
999999`` → ``1000k``, ``humanizeDuration 119.5`` → ``1m 59s``, ``title "it's"`` → ``It'S``,
``toUpper "straße"`` → ``STRAßE``, ``reReplaceAll`` expanding ``$1x`` as group "1x". Numeric
arguments may be floats, ints or numeric strings, as Prometheus's ``convertToFloat`` allows.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from urllib.parse import quote_plus

from inferwatch import regexp
from inferwatch.durations import DurationError, parse_duration_s
from inferwatch.golang.floats import parse_go_float
from inferwatch.golang.strings import expand, go_quote
from inferwatch.gotemplate.builtins import FuncError
from inferwatch.gotemplate.printf import sprintf
from inferwatch.gotemplate.values import GoValue, QueryResult, QuerySample, type_name

_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_BIG = ("k", "M", "G", "T", "P", "E", "Z", "Y")
_SMALL = ("m", "u", "n", "p", "f", "a", "z", "y")
_BINARY = ("ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi")


def to_float(v: GoValue) -> float:
    """Prometheus's ``convertToFloat``: float64, int or a string Go's ParseFloat accepts."""
    if isinstance(v, bool):
        raise FuncError("can't convert bool to float")
    if isinstance(v, float):
        return v
    if isinstance(v, int):
        return float(v)
    if isinstance(v, str):
        parsed = parse_go_float(v)
        if parsed is not None:
            return parsed
        why = "value out of range" if _DECIMAL.fullmatch(v) else "invalid syntax"
        raise FuncError(f"strconv.ParseFloat: parsing {go_quote(v)}: {why}")
    raise FuncError(f"can't convert {type_name(v)} to float")


def fmt4(v: float) -> str:
    return sprintf("%.4g", [v])


def _scaled(v: float, prefixes: tuple[str, ...], factor: float, up: bool) -> tuple[float, str]:
    prefix = ""
    for p in prefixes:
        if (abs(v) < factor) if up else (abs(v) >= 1):
            break
        prefix = p
        v = v / factor if up else v * factor
    return v, prefix


def humanize(arg: GoValue) -> str:
    v = to_float(arg)
    if v == 0 or math.isnan(v) or math.isinf(v):
        return fmt4(v)
    v, prefix = (
        _scaled(v, _BIG, 1000.0, up=True) if abs(v) >= 1 else _scaled(v, _SMALL, 1000, False)
    )
    return fmt4(v) + prefix


def humanize1024(arg: GoValue) -> str:
    v = to_float(arg)
    if abs(v) <= 1 or math.isnan(v) or math.isinf(v):
        return fmt4(v)
    v, prefix = _scaled(v, _BINARY, 1024.0, up=True)
    return fmt4(v) + prefix


def humanize_duration(arg: GoValue) -> str:
    v = to_float(arg)
    if math.isnan(v) or math.isinf(v):
        return fmt4(v)
    if v == 0:
        return fmt4(v) + "s"
    if abs(v) >= 1:
        sign = "-" if v < 0 else ""
        v = abs(v)
        total = int(min(v, 2.0**63 - 1))
        days, rest = divmod(total, 86_400)
        hours, rest = divmod(rest, 3600)
        minutes, seconds = divmod(rest, 60)
        if days:
            return f"{sign}{days}d {hours}h {minutes}m {seconds}s"
        if hours:
            return f"{sign}{hours}h {minutes}m {seconds}s"
        if minutes:
            return f"{sign}{minutes}m {seconds}s"
        return f"{sign}{fmt4(v)}s"
    v, prefix = _scaled(v, _SMALL, 1000, up=False)
    return f"{fmt4(v)}{prefix}s"


def humanize_percentage(arg: GoValue) -> str:
    return fmt4(to_float(arg) * 100) + "%"


def humanize_timestamp(arg: GoValue) -> str:
    """Go's ``time.Time.String()`` of the instant, in UTC, to the millisecond (as Prometheus)."""
    v = to_float(arg)
    if math.isnan(v) or math.isinf(v):
        return fmt4(v)
    nanos = v * 1e9
    ns = int(nanos) if -(2.0**63) <= nanos < 2.0**63 else -(2**63)
    ms = abs(ns) // 1_000_000 * (1 if ns >= 0 else -1)
    try:
        at = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
    except OverflowError:
        return fmt4(v)
    text = (
        f"{at.year:04d}-{at.month:02d}-{at.day:02d} {at.hour:02d}:{at.minute:02d}:{at.second:02d}"
    )
    if at.microsecond:
        text += f".{at.microsecond // 1000:03d}".rstrip("0")
    return text + " +0000 UTC"


def _per_rune(text: str, convert: str) -> str:
    out = []
    for c in text:
        mapped = getattr(c, convert)()
        out.append(mapped if len(mapped) == 1 else c)
    return "".join(out)


def to_upper(text: str) -> str:
    return _per_rune(text, "upper")


def to_lower(text: str) -> str:
    return _per_rune(text, "lower")


def _separator(c: str) -> bool:
    if c.isascii():
        return not (c.isalnum() or c == "_")
    if c.isalpha() or c.isdigit():
        return False
    return c.isspace()


def title(text: str) -> str:
    """Go's ``strings.Title``: upper-case the first letter after any separator, touch nothing
    else (``gpu0 is DOWN`` → ``Gpu0 Is DOWN``; ``it's`` → ``It'S``)."""
    out = []
    prev = " "
    for c in text:
        if _separator(prev):
            mapped = c.title()
            out.append(mapped if len(mapped) == 1 else c)
        else:
            out.append(c)
        prev = c
    return "".join(out)


def _compile(pattern: str, wrap: bool) -> regexp.Regexp:
    try:
        return regexp.compile(pattern)
    except regexp.RegexError as exc:
        message = f"error parsing regexp: {exc}: `{pattern}`"
        raise FuncError(f"regexp: Compile(`{pattern}`): {message}" if wrap else message) from None


def re_replace_all(pattern: str, repl: str, text: str) -> str:
    """Go's ``Regexp.ReplaceAllString``: no empty match right after a match, Go's ``$`` rules.
    RE2's matches come in one pass (Go's loop: after an empty match, one character on)."""
    regex = _compile(pattern, wrap=True)
    out: list[str] = []
    last_end = 0
    for m in regex.finditer(text):
        out.append(text[last_end : m.start()])
        if m.end() > last_end or m.start() == 0:
            out.append(expand(repl, m))
        last_end = m.end()
    out.append(text[last_end:])
    return "".join(out)


def match(pattern: str, text: str) -> bool:
    return _compile(pattern, wrap=False).search(text) is not None


def first(result: QueryResult) -> QuerySample:
    if not result:
        raise FuncError("first() called on vector with no elements")
    return result[0]


def label(name: str, sample: QuerySample) -> str:
    return sample.labels.get(name, "")


def value(sample: QuerySample) -> float:
    return sample.value


def strvalue(sample: QuerySample) -> str:
    return sample.labels.get("__value__", "")


def sort_by_label(name: str, result: QueryResult) -> QueryResult:
    return QueryResult(sorted(result, key=lambda s: s.labels.get(name, "")))


def parse_duration(text: str) -> float:
    """Prometheus's ``model.ParseDuration`` in seconds (``parseDuration "1h"`` → 3600), failing
    with Go's message as a template error."""
    try:
        return parse_duration_s(text)
    except DurationError:
        raise FuncError(f'not a valid duration string: "{text}"') from None


def graph_link(expr: str, tab: int) -> str:
    return f"/graph?g0.expr={quote_plus(expr, safe='')}&g0.tab={tab}"
