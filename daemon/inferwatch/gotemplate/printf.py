"""Go's ``fmt.Sprintf`` for template ``printf``, over :mod:`template_values`.

Go never fails a format: a value of the wrong type prints inline (``%!d(float64=1.5)``), a
missing argument as ``%!d(MISSING)``, leftovers as ``%!(EXTRA int=2)``. Floats follow Go, not
Python: ``%v``/``%g`` without a precision is the shortest form with an exponent from 1e+06, ±Inf
print as ``+Inf``/``-Inf`` and are never zero-padded, ``%x`` of a float is hexadecimal
scientific. Verbs: ``v s d f F e E g G x X o b c q U t`` and ``%%``; flags ``+ - space 0 #``
(``#`` only for ``0x`` prefixes), width, precision and ``*``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from inferwatch.golang.floats import format_go_v
from inferwatch.golang.strings import go_quote
from inferwatch.gotemplate.values import (
    QueryResult,
    QuerySample,
    TemplateData,
    print_value,
    type_name,
)

_SPEC = re.compile(r"([-+# 0]*)(\*|\d+)?(?:\.(\*|\d*))?")
_MAX_WIDTH = 10_000


class Spec(NamedTuple):
    verb: str
    flags: str = ""
    width: int | None = None
    precision: int | None = None


def _pad(text: str, spec: Spec, zero_ok: bool = False) -> str:
    width = spec.width or 0
    if len(text) >= width:
        return text
    if "-" in spec.flags:
        return text + " " * (width - len(text))
    if zero_ok and "0" in spec.flags:
        sign = text[0] if text[:1] in ("+", "-", " ") else ""
        return sign + "0" * (width - len(text)) + text[len(sign) :]
    return " " * (width - len(text)) + text


def _bad(spec: Spec, v: object) -> str:
    if v is None:
        return f"%!{spec.verb}(<nil>)"
    return f"%!{spec.verb}({type_name(v)}={format_value(v, Spec('v'))})"


def _sign(negative: bool, spec: Spec) -> str:
    if negative:
        return "-"
    return "+" if "+" in spec.flags else (" " if " " in spec.flags else "")


def _hex_float(v: float, upper: bool) -> str:
    if v == 0:
        text = "0x0p+00"
    else:
        mantissa, _, exponent = float.hex(abs(v)).partition("p")
        mantissa = mantissa.rstrip("0").rstrip(".")
        exp = int(exponent)
        text = f"{mantissa}p{'+' if exp >= 0 else '-'}{abs(exp):02d}"
    return text.upper() if upper else text


def _float(v: float, spec: Spec) -> str:
    verb = spec.verb
    if verb not in "vbgGeEfFxX":
        return _bad(spec, v)
    if math.isnan(v) or math.isinf(v):
        text = "NaN" if math.isnan(v) else ("+Inf" if v > 0 else "-Inf")
        if math.isnan(v) and ("+" in spec.flags or " " in spec.flags):
            text = ("+" if "+" in spec.flags else " ") + text
        return _pad(text, spec)
    a, p = abs(v), spec.precision
    if verb in "vgG":
        body = f"{a:.{p}g}" if p is not None else format_go_v(a)
    elif verb in "eE":
        body = f"{a:.{6 if p is None else p}e}"
    elif verb in "fF":
        body = f"{a:.{6 if p is None else p}f}"
    elif verb in "xX":
        body = _hex_float(a, verb == "X")
    else:
        mantissa, exponent = math.frexp(a)
        body = f"{int(mantissa * 2**53)}p{exponent - 53:+d}" if a else "0p-1074"
    if verb in "GEX":
        body = body.upper()
    text = _sign(math.copysign(1.0, v) < 0, spec) + body
    return _pad(text, spec, zero_ok=True)


_INT_BASES = {"b": "b", "o": "o", "O": "o", "x": "x", "X": "X", "d": "d", "v": "d"}


def _int(v: int, spec: Spec) -> str:
    verb = spec.verb
    if verb == "c":
        return _pad(chr(v) if 0 <= v <= 0x10FFFF else "\ufffd", spec)
    if verb == "q":
        return _pad("'" + go_quote(chr(v) if 0 <= v <= 0x10FFFF else "\ufffd")[1:-1] + "'", spec)
    if verb == "U":
        return _pad(f"U+{v:04X}", spec)
    if verb not in _INT_BASES:
        return _bad(spec, v)
    digits = format(abs(v), _INT_BASES[verb])
    if spec.precision is not None:
        digits = digits.zfill(spec.precision) if spec.precision or v else ""
    prefix = ""
    if verb == "O" or ("#" in spec.flags and verb in "xXob"):
        prefix = {"x": "0x", "X": "0X", "o": "0", "O": "0o", "b": "0b"}[verb]
    text = _sign(v < 0, spec) + prefix + digits
    return _pad(text, spec, zero_ok=spec.precision is None)


def _string(v: str, spec: Spec) -> str:
    verb = spec.verb
    if verb in "vs":
        return _pad(v if spec.precision is None else v[: spec.precision], spec)
    if verb == "q":
        return _pad(go_quote(v), spec)
    if verb in "xX":
        text = v.encode().hex()
        return _pad(text.upper() if verb == "X" else text, spec)
    return _bad(spec, v)


def format_value(v: object, spec: Spec) -> str:
    """One argument under one verb, as Go's ``fmt`` prints it."""
    if v is None:
        return _pad("<nil>", spec) if spec.verb == "v" else _bad(spec, v)
    if isinstance(v, bool):
        return _pad(print_value(v), spec) if spec.verb in "vt" else _bad(spec, v)
    if isinstance(v, int):
        return _int(v, spec)
    if isinstance(v, float):
        return _float(v, spec)
    if isinstance(v, str):
        return _string(v, spec)
    if isinstance(v, QuerySample):
        names = "+" in spec.flags and spec.verb == "v"
        labels = ("Labels:" if names else "") + format_value(v.labels, spec)
        value = ("Value:" if names else "") + format_value(v.value, spec)
        return "&{" + labels + " " + value + "}"
    if isinstance(v, QueryResult):
        return "[" + " ".join(format_value(s, spec) for s in v) + "]"
    if isinstance(v, TemplateData):
        parts = (v.labels, v.external_labels, v.external_url, v.value)
        return "{" + " ".join(format_value(p, spec) for p in parts) + "}"
    if isinstance(v, Mapping):
        items = (f"{format_value(k, spec)}:{format_value(v[k], spec)}" for k in sorted(v))
        return "map[" + " ".join(items) + "]"
    return _bad(spec, v)


def _star(args: Sequence[object], used: int) -> tuple[int | None, int]:
    if used < len(args):
        arg = args[used]
        if isinstance(arg, int) and not isinstance(arg, bool) and abs(arg) <= _MAX_WIDTH:
            return arg, used + 1
        return None, used + 1
    return None, used


def sprintf(fmt: str, args: Sequence[object]) -> str:
    """Go's ``fmt.Sprintf(fmt, args...)``."""
    out: list[str] = []
    used = 0
    i = 0
    while i < len(fmt):
        pct = fmt.find("%", i)
        if pct < 0:
            out.append(fmt[i:])
            break
        out.append(fmt[i:pct])
        m = _SPEC.match(fmt, pct + 1)
        assert m is not None
        flags, width_text, prec_text = m.groups()
        i = m.end()
        if i >= len(fmt):
            out.append("%!(NOVERB)")
            break
        verb = fmt[i]
        i += 1
        width = precision = None
        if width_text == "*":
            width, used = _star(args, used)
            if width is None:
                out.append("%!(BADWIDTH)")
            elif width < 0:
                flags, width = flags + "-", -width
        elif width_text:
            width = min(int(width_text), _MAX_WIDTH)
        if prec_text == "*":
            precision, used = _star(args, used)
            if precision is None or precision < 0:
                out.append("%!(BADPREC)")
                precision = None
        elif prec_text is not None:
            precision = min(int(prec_text or "0"), _MAX_WIDTH)
        if verb == "%":
            out.append("%")
            continue
        spec = Spec(verb, flags, width, precision)
        if used >= len(args):
            out.append(f"%!{verb}(MISSING)")
            continue
        out.append(format_value(args[used], spec))
        used += 1
    if used < len(args):
        extra = ", ".join(
            "<nil>" if a is None else f"{type_name(a)}={format_value(a, Spec('v'))}"
            for a in args[used:]
        )
        out.append(f"%!(EXTRA {extra})")
    return "".join(out)


def sprint(args: Sequence[object], newline: bool = False) -> str:
    """``print`` (spaces only between two non-strings) and ``println`` (always, plus ``\\n``)."""
    out: list[str] = []
    for k, a in enumerate(args):
        if k and (newline or not (isinstance(a, str) or isinstance(args[k - 1], str))):
            out.append(" ")
        out.append(format_value(a, Spec("v")))
    return "".join(out) + ("\n" if newline else "")
