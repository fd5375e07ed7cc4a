"""The seam between the pure stages: one ``Muter`` protocol and the mute decision for a flush.

Silences, flag files and inhibition all answer the same question (style.md §2 item 1,
Alertmanager's ``Muter``), so the pipeline combines them without knowing which is which; route
time intervals mute a whole route. :func:`mute_check` builds the callback :meth:`Grouper.due`
takes, so that a muted alert is not recorded as sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from inferwatch.alerts.model import Alert
from inferwatch.labels import Labels
from inferwatch.notify.group import Muted
from inferwatch.notify.route import RouteNode
from inferwatch.notify.timeintervals import Interval, route_muted


class Muter(Protocol):
    def mutes(self, labels: Labels, now: float) -> bool: ...


def mute_check(muters: Iterable[Muter], intervals: Mapping[str, Interval], now: float) -> Muted:
    """An alert is muted if its route is in quiet hours or any muter mutes its labels."""
    chain = tuple(muters)

    def muted(route: RouteNode, alert: Alert) -> bool:
        opts = route.opts
        if route_muted(opts.mute_time_intervals, opts.active_time_intervals, intervals, now):
            return True
        return any(m.mutes(alert.labels, now) for m in chain)

    return muted
