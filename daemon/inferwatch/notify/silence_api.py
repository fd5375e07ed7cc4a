"""The silences API behind ``/api/v1/silences``: validate like Alertmanager, persist every change.

Why here and not in the HTTP handler: the rules (matchers, comment and author required, end
after start, a start in the past means now) are the contract that ``amtool``-trained hands
expect, and they are easier to test without a server. Every change is written through
:meth:`Silences.save` to ``silences.json`` in the state dir before the answer goes out, so a
silence the owner was told exists survives a crash, and the next ``NotifyService`` (reload,
restart) loads exactly it. The silences are reached through a getter because a config reload
replaces the daemon's NotifyService, and with it the :class:`Silences` object.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from inferwatch.clock import SYSTEM_CLOCK, Clock
from inferwatch.config.types import parse_duration
from inferwatch.labels import Matcher, valid_label_name
from inferwatch.logsetup import get_logger
from inferwatch.notify.matchers import format_matchers, parse_list
from inferwatch.notify.payload import rfc3339
from inferwatch.notify.silence import Silence, SilenceError, Silences, check_time

log = get_logger(__name__)
_OPS = {(False, True): "=", (False, False): "!=", (True, True): "=~", (True, False): "!~"}
MAX_MATCHERS = 64
MAX_FIELD_BYTES = 4096  # any one matcher name or value, createdBy, comment (UTF-8)


class SilenceNotFoundError(SilenceError):
    """No silence has that id (HTTP 404)."""


class SilencePersistError(RuntimeError):
    """The change is in memory but could not be written to the state dir (HTTP 500)."""


def parse_time(value: object, field: str) -> float:
    """Unix seconds, or RFC 3339 as Alertmanager's API takes it (``2026-09-01T02:00:00Z``)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise SilenceError(f"{field} must be a finite time, not {value}")
        return float(value)
    if isinstance(value, str) and value:
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            if when.tzinfo is not None:
                return when.timestamp()
    raise SilenceError(f"{field} must be Unix seconds or an RFC 3339 time with a zone")


def check_size(value: str, what: str) -> None:
    """Refuse a string longer than :data:`MAX_FIELD_BYTES` in UTF-8."""
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_FIELD_BYTES:
        raise SilenceError(f"{what} is {size} bytes; at most {MAX_FIELD_BYTES} are accepted")


def parse_matcher(doc: object) -> Matcher:
    """One matcher in the API shape ``{name, value, isRegex, isEqual}`` (isEqual defaults true)."""
    if not isinstance(doc, Mapping):
        raise SilenceError("each matcher must be an object with name and value")
    name, value = doc.get("name"), doc.get("value")
    if isinstance(name, str):
        check_size(name, "a matcher name")
    if not isinstance(name, str) or not valid_label_name(name):
        raise SilenceError(f"invalid label name {name!r} in a matcher")
    if not isinstance(value, str):
        raise SilenceError(f"matcher {name}: value must be a string")
    check_size(value, f"matcher {name}: the value")
    is_regex, is_equal = doc.get("isRegex", False), doc.get("isEqual", True)
    if not isinstance(is_regex, bool) or not isinstance(is_equal, bool):
        raise SilenceError(f"matcher {name}: isRegex and isEqual must be booleans")
    try:
        return Matcher.of(name, _OPS[is_regex, is_equal], value)
    except re.error as exc:
        raise SilenceError(f"matcher {name}: invalid regex {value!r}: {exc}") from None


def silence_from_body(body: object, now: float) -> Silence:
    """A new silence from a POST body, checked as Alertmanager checks it."""
    if not isinstance(body, Mapping):
        raise SilenceError("the body must be a JSON object")
    if body.get("id"):
        raise SilenceError("updating a silence is not supported: expire it and add a new one")
    matchers = body.get("matchers")
    if not isinstance(matchers, list) or not matchers:
        raise SilenceError("a silence needs at least one matcher")
    if len(matchers) > MAX_MATCHERS:
        raise SilenceError(
            f"a silence may have at most {MAX_MATCHERS} matchers, this one has {len(matchers)}"
        )
    for key in ("startsAt", "endsAt"):
        if key not in body:
            raise SilenceError(f"{key} is required")
    requested = parse_time(body["startsAt"], "startsAt")
    check_time(requested, "startsAt")
    starts = max(requested, now)  # a past start means now
    ends = parse_time(body["endsAt"], "endsAt")
    check_time(ends, "endsAt")
    if ends <= now:
        raise SilenceError("endsAt must be in the future")
    if ends <= starts:
        raise SilenceError("endsAt must be after startsAt")
    created_by, comment = body.get("createdBy"), body.get("comment")
    if not isinstance(created_by, str) or not created_by.strip():
        raise SilenceError("createdBy is required")
    if not isinstance(comment, str) or not comment.strip():
        raise SilenceError("comment is required")
    check_size(created_by, "createdBy")
    check_size(comment, "comment")
    silence = Silence(
        id="",
        matchers=tuple(parse_matcher(m) for m in matchers),
        starts_at=starts,
        ends_at=ends,
        created_by=created_by.strip(),
        comment=comment.strip(),
    )
    silence.validate()
    return silence


def view(silence: Silence, now: float) -> dict[str, Any]:
    """The API's view of one silence: the stored fields plus ``status.state``, as Alertmanager."""
    return {**silence.to_dict(), "status": {"state": silence.state(now).value}}


@dataclass
class SilenceAPI:
    """List, create and expire the daemon's silences; ``path`` is the state dir's silences.json."""

    silences: Callable[[], Silences | None]
    path: Path
    clock: Clock = SYSTEM_CLOCK

    def _current(self) -> Silences:
        found = self.silences()
        if found is None:
            raise SilencePersistError("notifications are not running yet")
        return found

    def all(self) -> list[Silence]:
        return self._current().all()

    def get(self, silence_id: str) -> Silence:
        for silence in self.all():
            if silence.id == silence_id:
                return silence
        raise SilenceNotFoundError(f"no silence {silence_id!r}")

    def list_all(self) -> dict[str, Any]:
        now = self.clock.time()
        return {"silences": [view(s, now) for s in self._current().all()]}

    def create(self, body: object) -> Silence:
        now = self.clock.time()
        silences = self._current()
        stored = silences.add(silence_from_body(body, now))
        self._save(silences)
        log.info("silence added", id=stored.id, created_by=stored.created_by)
        return stored

    def expire(self, silence_id: str) -> Silence:
        silences = self._current()
        try:
            expired = silences.expire(silence_id, self.clock.time())
        except SilenceError as exc:
            raise SilenceNotFoundError(str(exc)) from None
        self._save(silences)
        log.info("silence expired", id=silence_id)
        return expired

    def _save(self, silences: Silences) -> None:
        """Synchronous on purpose: a few KB written by a human a few times a day, and writing
        from the loop means no thread ever reads the dict while a handler changes it."""
        try:
            silences.save(self.path)
        except OSError as exc:
            log.error("cannot save silences", path=str(self.path), error=str(exc))
            raise SilencePersistError(
                f"silence changed but not saved to {self.path}: {exc}"
            ) from exc


# -- the client side (``inferwatch silence``), kept next to the server so both agree on the shape


def request_body(
    matchers: list[str], duration: str, comment: str, author: str, now: float
) -> dict[str, Any]:
    """The POST body for ``silence add``; ``ValueError`` (MatcherError included) on bad input,
    before anything is sent."""
    parsed = parse_list(matchers)
    if not parsed:
        raise ValueError("give at least one --matcher, e.g. --matcher 'alertname=\"X\"'")
    seconds = parse_duration(duration)
    if seconds <= 0:
        raise ValueError("--duration must be positive")
    doc = Silence("", parsed, now, now + seconds, author, comment).to_dict()
    del doc["id"]
    return {**doc, "startsAt": rfc3339(now), "endsAt": rfc3339(now + seconds)}


def format_listing(doc: Mapping[str, Any]) -> list[str]:
    """``silence list`` lines: id, state, end (UTC), matchers, author and comment.

    Whatever the daemon answered, each item gives one line: an item this client cannot read
    (another version, a hand-edited file) is shown raw instead of ending the listing."""
    items = doc.get("silences")
    if not isinstance(items, list):
        return []
    return [_listing_line(item) for item in items]


def _listing_line(item: object) -> str:
    if not isinstance(item, Mapping):
        return f"?  unreadable item: {item!r:.200}"
    status = item.get("status")
    state = status.get("state", "?") if isinstance(status, Mapping) else "?"
    try:
        silence = Silence.from_dict(dict(item))
    except (KeyError, TypeError, ValueError, re.error) as exc:
        return f"{item.get('id', '?')}  {state:<8} unreadable ({exc!r:.120}): {item!r:.200}"
    return (
        f"{silence.id}  {state:<8} until {_when(silence.ends_at)}  "
        f"{format_matchers(silence.matchers)}  by {silence.created_by}: {silence.comment}"
    )


def _when(ts: float) -> str:
    """RFC 3339 where the time has one, else the raw number (NaN, 1e300)."""
    try:
        return rfc3339(ts)
    except (ValueError, OverflowError, OSError):
        return repr(ts)


__all__ = [
    "SilenceAPI",
    "SilenceNotFoundError",
    "SilencePersistError",
    "format_listing",
    "request_body",
    "silence_from_body",
]
