"""What pure pipelines produce: samples to write and events to keep, applied in one place.

Derivation code (kernel faults, engine speed) is clock-free and I/O-free: it returns effects, and
the daemon and ``replay`` apply them the same way, so both see identical series and events.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from inferwatch.event import Event
from inferwatch.labels import Labels
from inferwatch.store.tsdb import SeriesStore


class CounterInc(NamedTuple):
    """Increment an event counter (carried forward by the store)."""

    name: str
    labels: Labels
    delta: float
    at: float
    alertable: bool = True  # False: an old record counted as a baseline, never as news
    wake: bool = True  # False: a throughput counter; rules reading it wait for their interval


class GaugeSet(NamedTuple):
    """A gauge reading at ``at`` (e.g. decode tokens/s at the end of a stats window). A named
    tuple: a stats window makes ~15 of them, and a frozen dataclass costs four times as much."""

    name: str
    labels: Labels
    value: float
    at: float


class SeriesEnd(NamedTuple):
    """The series stops here (engine restarted, speculative decoding off): a staleness marker."""

    name: str
    labels: Labels
    at: float


Effect = CounterInc | GaugeSet | SeriesEnd | Event


def apply(effects: Iterable[Effect], store: SeriesStore) -> list[Event]:
    """Write the samples into ``store``; return the events, in order, for the event log."""
    events: list[Event] = []
    set_gauge = store.set
    for effect in effects:
        if isinstance(effect, GaugeSet):  # most effects: a stats window sets ~15 gauges
            set_gauge(effect.name, effect.labels, effect.value, effect.at)
        elif isinstance(effect, CounterInc):
            if effect.alertable:
                store.inc(effect.name, effect.labels, effect.delta, effect.at, wake=effect.wake)
            else:
                store.inc_baseline(effect.name, effect.labels, effect.delta)
        elif isinstance(effect, SeriesEnd):
            store.mark_stale(effect.name, effect.labels, effect.at)
        else:
            events.append(effect)
    return events
