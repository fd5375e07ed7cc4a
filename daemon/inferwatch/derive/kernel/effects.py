"""What goes into the kernel pipeline, and how its effects say whether they may alert.

The pipeline is pure: it never reads a clock, the store or the event log. The caller turns a
source's record into a :class:`KernelInput` (computing the record's wall time itself) and applies
the returned effects (``derive.effects.Effect``: events into the event log, counter increments
into the store, e.g. with ``derive.effects.apply``) before acknowledging the record.

Records older than ``kernel.alert_max_age`` on a first start are still recorded and counted,
but must not fire alerts: their events carry ``details["alertable"] = False`` and their counter
increments are ``derive.effects.CounterInc`` with ``alertable=False`` (``apply`` writes them so
the total is right, but as a baseline no rule sees as a new increase).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inferwatch.derive.effects import CounterInc, Effect
from inferwatch.event import Event
from inferwatch.labels import make_labels
from inferwatch.parsers.kernel_message import KernelMessage, Kinds, parse_kernel_message, triage


@dataclass(frozen=True, slots=True)
class KernelInput:
    """One kernel message, as any kernel source delivers it.

    ``at`` is the record's wall-clock time in Unix seconds, computed by the caller (from kmsg's
    microseconds, journald's timestamps or a text prefix). ``message`` is the body without
    prefix; a multi-line record keeps its newlines; ``record`` is what the parsers read in it,
    parsed once by :func:`kernel_input` (None: nothing, yet the record still moves time on).
    ``key`` identifies the record for
    idempotency (``"boot_id:seq"``, a journal cursor, ``"path:line"``). ``facility`` and
    ``level`` are carried for the record's context only: the pipeline never filters on them
    (test records written from user space arrive with facility ``user``, kernel-log.md §7).
    """

    source: str
    line: int
    at: float
    message: str
    key: str
    record: KernelMessage | None
    facility: str | None = None
    level: str | None = None
    alertable: bool = True


def kernel_input(
    source: str,
    line: int,
    at: float,
    message: str,
    key: str,
    *,
    kinds: Kinds | None = None,
    facility: str | None = None,
    level: str | None = None,
    alertable: bool = True,
) -> KernelInput:
    """A :class:`KernelInput` with its message parsed; ``kinds`` is the caller's triage of the
    raw record when it made one (else the message is triaged here)."""
    record = parse_kernel_message(message, triage(message) if kinds is None else kinds)
    return KernelInput(source, line, at, message, key, record, facility, level, alertable)


def counter(
    name: str, labels: Mapping[str, str | None], at: float, *, alertable: bool, delta: float = 1.0
) -> CounterInc:
    """A counter increment; ``None`` label values are left out, as Prometheus does empty ones."""
    pairs = {k: v for k, v in labels.items() if v is not None}
    return CounterInc(name, make_labels(pairs), delta, at, alertable)


def event(
    kind: str,
    item: KernelInput,
    details: Mapping[str, Any],
    labels: Mapping[str, str | None] | None = None,
) -> Event:
    """An event born from one kernel record, carrying its place and alertability."""
    body = dict(details)
    body["alertable"] = item.alertable
    return Event(
        type=kind,
        at=item.at,
        source=item.source,
        key=item.key,
        line=item.line,
        labels={k: v for k, v in (labels or {}).items() if v is not None},
        details=body,
    )


def alertable(effect: Effect) -> bool:
    """Whether an effect may fire an alert (effects from other pipelines always may)."""
    if isinstance(effect, Event):
        return bool(effect.details.get("alertable", True))
    return effect.alertable if isinstance(effect, CounterInc) else True
