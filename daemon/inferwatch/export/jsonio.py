"""Standard JSON only, both ways: what the API reads and what it writes.

Python's :mod:`json` accepts and emits ``NaN`` and ``Infinity`` by default; neither is JSON, Go
clients (amtool, Prometheus tooling) refuse them, and a ``NaN`` end time made a silence that no
comparison could ever end. Requests are parsed with those constants refused and answers are
written with non-finite floats as ``null``. Deep nesting is refused as a bad request, not a
``RecursionError`` escaping into the server.
"""

from __future__ import annotations

import json
import math
from typing import Any


class BodyError(ValueError):
    """A request body that is not standard JSON (HTTP 400)."""


def _refuse_constant(name: str) -> Any:
    raise BodyError(f"{name} is not JSON: times and numbers must be finite")


def loads(text: str) -> Any:
    """Parse a request body; :class:`BodyError` says what is wrong in words for the client."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except BodyError:
        raise
    except RecursionError:
        raise BodyError("the body nests too deeply") from None
    except ValueError as exc:
        raise BodyError(f"the body must be JSON: {exc}") from None


def finite(doc: Any) -> Any:
    """A copy of ``doc`` with every NaN or infinite float replaced by ``None``."""
    if isinstance(doc, float):
        return doc if math.isfinite(doc) else None
    if isinstance(doc, dict):
        return {k: finite(v) for k, v in doc.items()}
    if isinstance(doc, list | tuple):
        return [finite(v) for v in doc]
    return doc


def dumps(doc: Any) -> str:
    """An API answer: indented, standard JSON; unknown objects become their ``str``."""
    return json.dumps(finite(doc), indent=1, default=str, allow_nan=False)


__all__ = ["BodyError", "dumps", "finite", "loads"]
