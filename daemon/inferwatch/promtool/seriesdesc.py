"""promtool's series description language: ``name{l="v"}`` and expanding values (``1+2x3``).

In Prometheus this is part of the PromQL parser (``series_description`` in its grammar); promtool
uses it for ``input_series`` and ``exp_samples``. Label values are Go-quoted strings. Values:
a number (decimal, exponent, ``Inf``, ``NaN``; no hex), ``_`` (a missing sample), ``stale`` (a
staleness marker), ``axn`` (n + 1 copies), ``a+bxn`` / ``a-bxn`` (n + 1 values by repeated
addition), ``_xn`` (n missing) (reference/promql.md §9).
"""

from __future__ import annotations

import re

from inferwatch.labels import NAME_LABEL
from inferwatch.store.series import STALE_NAN


class SeriesDescError(ValueError):
    """Text that is not valid series notation."""


_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_ESCAPES |= {"\\": "\\", '"': '"', "'": "'"}


def _unquote(text: str, i: int) -> tuple[str, int]:
    """A Go-quoted string starting at ``text[i]``: (value, index after it)."""
    quote = text[i : i + 1]
    if not quote or quote not in "\"'`":
        raise SeriesDescError(f"expected a quoted label value at {i} in {text!r}")
    out: list[str] = []
    j = i + 1
    while j < len(text):
        c = text[j]
        if c == quote:
            return "".join(out), j + 1
        if c == "\\" and quote != "`":
            nxt = text[j + 1 : j + 2]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                j += 2
                continue
            hexlen = {"x": 2, "u": 4, "U": 8}.get(nxt)
            if hexlen:
                digits, base = text[j + 2 : j + 2 + hexlen], 16
            else:
                digits, base = text[j + 1 : j + 4], 8
            if hexlen or nxt.isdigit():
                try:
                    out.append(chr(int(digits, base)))
                except ValueError:
                    raise SeriesDescError(f"bad escape sequence in {text!r}") from None
                j += 2 + hexlen if hexlen else 4
                continue
            raise SeriesDescError(f"unknown escape sequence in {text!r}")
        out.append(c)
        j += 1
    raise SeriesDescError(f"unterminated quoted string in {text!r}")


def parse_metric(text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """``name{l="v", …}`` as promtool's ``parser.ParseMetric`` reads it: (name, sorted pairs).

    Pairs keep empty values (promtool compares them as written), unlike the store's labels.
    """
    s = text.strip()
    m = _METRIC_NAME.match(s)
    name = m.group() if m else ""
    i = m.end() if m else 0
    pairs: dict[str, str] = {}
    rest = s[i:].strip()
    if rest:
        if not rest.startswith("{") or not rest.endswith("}"):
            raise SeriesDescError(f"invalid series {text!r}")
        body = rest[1:-1]
        j = 0
        while True:
            while j < len(body) and body[j] in " \t,":
                j += 1
            if j >= len(body):
                break
            lm = _LABEL_NAME.match(body, j)
            if lm is None:
                raise SeriesDescError(f"invalid label name in {text!r}")
            j = lm.end()
            while j < len(body) and body[j] == " ":
                j += 1
            if body[j : j + 1] != "=":
                raise SeriesDescError(f"expected '=' after {lm.group()!r} in {text!r}")
            j += 1
            while j < len(body) and body[j] == " ":
                j += 1
            value, j = _unquote(body, j)
            if lm.group() in pairs:
                raise SeriesDescError(f"duplicate label {lm.group()!r} in {text!r}")
            pairs[lm.group()] = value
    if NAME_LABEL in pairs:
        name = pairs.pop(NAME_LABEL)
    if not name and not pairs and not rest:
        raise SeriesDescError(f"invalid series {text!r}")
    return name, tuple(sorted(pairs.items()))


_NUM = r"(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[iI][nN][fF]|[nN][aA][nN])"
_ITEM = re.compile(
    rf"_(?:x(?P<gaps>[0-9]+))?|(?P<stale>stale)"
    rf"|(?P<base>[+-]?{_NUM})(?:(?P<step>[+-]{_NUM})x(?P<steps>[0-9]+)|x(?P<times>[0-9]+))?"
)


def expand_values(text: str) -> list[float | None]:
    """promtool's value notation: one entry per slot, None for ``_``, the marker for ``stale``.

    ``axn`` is n + 1 copies; ``a+bxn`` is n + 1 values made by repeated addition (so
    ``0+0.1x10`` ends at 0.9999999999999999); ``_xn`` is n missing slots.
    """
    out: list[float | None] = []
    for item in text.split():
        m = _ITEM.fullmatch(item)
        if m is None:
            raise SeriesDescError(f"bad series value {item!r} (number, '_', 'stale', axn, a+bxn)")
        if item.startswith("_"):
            out.extend([None] * (int(m["gaps"]) if m["gaps"] else 1))
        elif m["stale"]:
            out.append(STALE_NAN)
        elif m["step"] is not None:
            value, step = float(m["base"]), float(m["step"])
            out.append(value)
            for _ in range(int(m["steps"])):
                value += step
                out.append(value)
        else:
            out.extend([float(m["base"])] * (int(m["times"]) + 1 if m["times"] else 1))
    return out
