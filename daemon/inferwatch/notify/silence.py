"""Silences, and maintenance flag files that act as silences while they exist.

A silence mutes the alerts its matchers select between ``starts_at`` and ``ends_at``; it carries
who made it and why, because an unexplained silence is how a real outage goes unnoticed.
Silences persist as one JSON file written atomically, so a restart neither forgets one nor
resurrects an expired one; expired silences are kept until a retention passes (for the API).
A maintenance flag file (``silence_files`` in the config) is the operator's shortcut: ``touch``
it before a model swap, delete it after, no API call needed.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from inferwatch.config.models import SilenceFile
from inferwatch.labels import Labels, Matcher, MatchOp
from inferwatch.notify.matchers import matches, parse_list
from inferwatch.store.snapshot import write_atomic

RETENTION = 5 * 86400.0
# The times a silence may carry: the Unix epoch to the last second RFC 3339 can write
# (9999-12-31T23:59:59Z). NaN would make a silence active forever (no comparison is true).
EARLIEST = 0.0
LATEST = 253_402_300_799.0


class SilenceError(ValueError):
    """An invalid silence, or a silences file that cannot be read."""


def matcher_doc(m: Matcher) -> dict[str, Any]:
    """Alertmanager's API shape of one matcher."""
    return {
        "name": m.name,
        "value": m.value,
        "isRegex": m.op in (MatchOp.RE, MatchOp.NRE),
        "isEqual": m.op in (MatchOp.EQ, MatchOp.RE),
    }


class SilenceState(StrEnum):
    PENDING = "pending"
    ACTIVE = "active"
    EXPIRED = "expired"


@dataclass(frozen=True, slots=True)
class Silence:
    id: str
    matchers: tuple[Matcher, ...]
    starts_at: float
    ends_at: float
    created_by: str
    comment: str

    def state(self, now: float) -> SilenceState:
        if now >= self.ends_at:
            return SilenceState.EXPIRED
        return SilenceState.PENDING if now < self.starts_at else SilenceState.ACTIVE

    def mutes(self, labels: Labels, now: float) -> bool:
        return self.state(now) is SilenceState.ACTIVE and matches(self.matchers, labels)

    def validate(self) -> None:
        check_time(self.starts_at, "startsAt")
        check_time(self.ends_at, "endsAt")
        if not self.matchers:
            raise SilenceError("a silence needs at least one matcher")
        if all(m.matches("") for m in self.matchers):
            raise SilenceError("a silence's matchers must not all match the empty label set")
        if self.ends_at <= self.starts_at:
            raise SilenceError("a silence must end after it starts")
        if not self.created_by.strip() or not self.comment.strip():
            raise SilenceError("a silence needs created_by and a comment")

    def to_dict(self) -> dict[str, Any]:
        """Alertmanager's API shape for matchers; times as Unix seconds."""
        return {
            "id": self.id,
            "matchers": [matcher_doc(m) for m in self.matchers],
            "startsAt": self.starts_at,
            "endsAt": self.ends_at,
            "createdBy": self.created_by,
            "comment": self.comment,
        }

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Silence:
        ops = {(False, True): "=", (False, False): "!=", (True, True): "=~", (True, False): "!~"}
        found = tuple(
            Matcher.of(str(m["name"]), ops[bool(m["isRegex"]), bool(m["isEqual"])], str(m["value"]))
            for m in doc["matchers"]
        )
        return cls(
            id=str(doc["id"]),
            matchers=found,
            starts_at=float(doc["startsAt"]),
            ends_at=float(doc["endsAt"]),
            created_by=str(doc["createdBy"]),
            comment=str(doc["comment"]),
        )


def check_time(value: float, field: str) -> None:
    """A finite Unix time a silence may carry, else :class:`SilenceError` naming ``field``."""
    if not math.isfinite(value):
        raise SilenceError(f"{field} must be a finite time, not {value}")
    if not EARLIEST <= value <= LATEST:
        raise SilenceError(
            f"{field} must be between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z"
            f" (Unix {EARLIEST:.0f} to {LATEST:.0f}), not {value:g}"
        )


def _new_id() -> str:
    return str(uuid.uuid4())


class Silences:
    """The silences of one daemon; ``new_id`` is injected so tests get stable ids."""

    def __init__(self, new_id: Callable[[], str] = _new_id) -> None:
        self._new_id = new_id
        self._by_id: dict[str, Silence] = {}

    def add(self, silence: Silence) -> Silence:
        """Store a silence; an empty id gets a fresh one. Returns what was stored."""
        silence.validate()
        if not silence.id:
            silence = replace(silence, id=self._new_id())
        self._by_id[silence.id] = silence
        return silence

    def expire(self, silence_id: str, now: float) -> Silence:
        found = self._by_id.get(silence_id)
        if found is None:
            raise SilenceError(f"no silence {silence_id!r}")
        if found.state(now) is not SilenceState.EXPIRED:
            found = replace(found, starts_at=min(found.starts_at, now), ends_at=now)
            self._by_id[silence_id] = found
        return found

    def all(self) -> list[Silence]:
        return sorted(self._by_id.values(), key=lambda s: (s.starts_at, s.id))

    def muted_by(self, labels: Labels, now: float) -> list[str]:
        return [s.id for s in self.all() if s.mutes(labels, now)]

    def mutes(self, labels: Labels, now: float) -> bool:
        return any(s.mutes(labels, now) for s in self._by_id.values())

    def gc(self, now: float, retention: float = RETENTION) -> int:
        """Forget silences expired longer than ``retention`` ago; returns how many."""
        old = [k for k, s in self._by_id.items() if s.ends_at + retention <= now]
        for k in old:
            del self._by_id[k]
        return len(old)

    def save(self, path: Path) -> None:
        doc = {"version": 1, "silences": [s.to_dict() for s in self.all()]}
        text = json.dumps(doc, indent=1, sort_keys=True, allow_nan=False)
        write_atomic(path, text.encode())

    def load(self, path: Path) -> int:
        """Replace the silences with the file's; a missing file is none. Returns how many."""
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            self._by_id = {}
            return 0
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SilenceError(f"cannot read silences from {path}: {exc}") from None
        try:
            if doc.get("version") != 1:
                raise SilenceError(f"unknown version {doc.get('version')!r}")
            loaded = [Silence.from_dict(d) for d in doc["silences"]]
            for s in loaded:
                s.validate()
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise SilenceError(f"invalid silences file {path}: {exc!r}") from None
        self._by_id = {s.id: s for s in loaded}
        return len(loaded)


@dataclass(frozen=True, slots=True)
class FlagFile:
    """While ``path`` exists, mute what ``matchers`` select (no matchers: every alert)."""

    path: Path
    matchers: tuple[Matcher, ...]
    comment: str

    @classmethod
    def from_config(cls, cfg: SilenceFile) -> FlagFile:
        return cls(cfg.path, parse_list(cfg.matchers), cfg.comment)

    @property
    def id(self) -> str:
        return f"file:{self.path}"

    def mutes(self, labels: Labels, now: float = 0.0) -> bool:
        """``now`` is unused: the file's presence is the state (checked at each call)."""
        del now
        return matches(self.matchers, labels) and self.path.exists()


class Silencer:
    """Silences and flag files together, answering the pipeline's "is this muted now?"."""

    def __init__(self, silences: Silences, files: Iterable[FlagFile] = ()) -> None:
        self.silences = silences
        self.files = tuple(files)

    def muted_by(self, labels: Labels, now: float) -> list[str]:
        return self.silences.muted_by(labels, now) + [
            f.id for f in self.files if f.mutes(labels, now)
        ]

    def mutes(self, labels: Labels, now: float) -> bool:
        return self.silences.mutes(labels, now) or any(f.mutes(labels, now) for f in self.files)
