"""Secret redaction: every secret value the config resolves is registered here, and every log
line, error text, status document and label value that leaves the process passes :func:`redact`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

MASK = "<redacted>"
_MIN_LEN = 4  # shorter values would mask ordinary words
_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None
# Query parameters and URL credentials that carry secrets even when not configured as such.
_URL_SECRETS = re.compile(
    r"(?i)((?:access_token|token|key|secret|sign|sendkey|password)=)[^&\s\"']+"
    r"|(://[^:/@\s]+:)[^@/\s]+(@)"
)


_TOKEN_LEN = 16  # a path segment this long in a secret URL is a token, not a word


def _url_parts(value: str) -> list[str]:
    """A secret URL's pieces that travel on their own (a server echoing the request path, a
    proxy logging the query): its path and query, and token-like path segments and values."""
    if "://" not in value:
        return []
    parts = urlsplit(value)
    found = [parts.path, parts.query]
    found += [seg for seg in parts.path.split("/") if len(seg) >= _TOKEN_LEN]
    found += [v for _, v in parse_qsl(parts.query) if len(v) >= _MIN_LEN]
    return [f for f in found if len(f) >= _MIN_LEN and f != "/"]


def register_secret(value: str) -> None:
    global _pattern  # noqa: PLW0603 - one process-wide table, rebuilt on change
    value = value.strip()
    if len(value) < _MIN_LEN:
        return
    with _lock:
        if value in _secrets:
            return
        _secrets.add(value)
        _secrets.update(_url_parts(value))
        ordered = sorted(_secrets, key=len, reverse=True)
        _pattern = re.compile("|".join(re.escape(s) for s in ordered))


def redact(text: str) -> str:
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    return _URL_SECRETS.sub(_mask_match, text)


def _mask_match(m: re.Match[str]) -> str:
    if m.group(1):
        return m.group(1) + MASK
    return f"{m.group(2)}{MASK}{m.group(3)}"


def redact_obj(obj: Any) -> Any:
    """Redact every string inside a JSON-like structure."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, Mapping):
        return {k: redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [redact_obj(v) for v in obj]
    return obj
