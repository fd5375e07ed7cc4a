"""The routing tree, built from Alertmanager's ``route`` config and matched as Alertmanager does.

Every alert enters the root; children are tried in order and the first that matches takes the
alert unless it says ``continue: true``; a node none of whose children match handles the alert
itself. Children inherit ``receiver``, ``group_by`` and the three timers; defaults are exactly
Alertmanager's, so a route copied from an existing Alertmanager config behaves the same here.
Time intervals are not inherited (Alertmanager does not either).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from inferwatch.config.alertmanager import Route
from inferwatch.labels import Labels, Matcher
from inferwatch.notify.matchers import format_matchers, matches, parse_list

DEFAULT_GROUP_WAIT = 30.0
DEFAULT_GROUP_INTERVAL = 300.0
DEFAULT_REPEAT_INTERVAL = 4 * 3600.0
GROUP_BY_ALL = "..."


class RouteError(ValueError):
    """A route config Alertmanager would reject too."""


@dataclass(frozen=True, slots=True)
class RouteOpts:
    """What a node does with the alerts it takes, after inheritance."""

    receiver: str
    group_by: tuple[str, ...] | None  # None: every label (``'...'``), i.e. no aggregation
    group_wait: float = DEFAULT_GROUP_WAIT
    group_interval: float = DEFAULT_GROUP_INTERVAL
    repeat_interval: float = DEFAULT_REPEAT_INTERVAL
    mute_time_intervals: tuple[str, ...] = ()
    active_time_intervals: tuple[str, ...] = ()
    hold_time_intervals: tuple[str, ...] = ()

    def group_labels(self, labels: Labels) -> Labels:
        """The label values that name this alert's group on this route."""
        if self.group_by is None:
            return labels
        return tuple((k, v) for k, v in labels if k in self.group_by)


@dataclass(frozen=True, slots=True)
class RouteNode:
    """One node of the tree.

    ``key`` is the path of child indexes and matchers (``{}/0{severity="critical"}``): unique,
    and stable across reloads of the same config, so group keys survive a restart."""

    key: str
    matchers: tuple[Matcher, ...]
    opts: RouteOpts
    continue_: bool
    routes: tuple[RouteNode, ...]

    @property
    def receiver(self) -> str:
        return self.opts.receiver

    def match(self, labels: Labels) -> list[RouteNode]:
        """The nodes that handle ``labels``: depth first, ``continue`` keeps looking."""
        if not matches(self.matchers, labels):
            return []
        found: list[RouteNode] = []
        for child in self.routes:
            hits = child.match(labels)
            found.extend(hits)
            if hits and not child.continue_:
                break
        return found or [self]

    def walk(self) -> Iterable[RouteNode]:
        yield self
        for child in self.routes:
            yield from child.walk()


def _group_by(value: list[str] | None, inherited: tuple[str, ...] | None) -> tuple[str, ...] | None:
    if value is None:
        return inherited
    if GROUP_BY_ALL in value:
        if len(value) != 1:
            raise RouteError("group_by: '...' must be the only entry")
        return None
    if len(set(value)) != len(value):
        raise RouteError(f"group_by has duplicate labels: {value}")
    return tuple(sorted(value))


def _build(
    cfg: Route, parent: RouteOpts, key: str, intervals: frozenset[str] | None, root: bool
) -> RouteNode:
    try:
        found = parse_list(cfg.matchers)
    except ValueError as exc:
        raise RouteError(str(exc)) from None
    for name in (*cfg.mute_time_intervals, *cfg.active_time_intervals):
        if root:
            raise RouteError("the root route cannot have mute or active time intervals")
        if intervals is not None and name not in intervals:
            raise RouteError(f"unknown time interval {name!r}")
    hold = cfg.hold_time_intervals
    if hold is None:
        hold = list(parent.hold_time_intervals)
    for name in hold:
        if intervals is not None and name not in intervals:
            raise RouteError(f"hold_time_intervals: unknown time interval {name!r}")
    opts = RouteOpts(
        receiver=cfg.receiver or parent.receiver,
        group_by=_group_by(cfg.group_by, parent.group_by),
        group_wait=parent.group_wait if cfg.group_wait is None else cfg.group_wait,
        group_interval=parent.group_interval if cfg.group_interval is None else cfg.group_interval,
        repeat_interval=(
            parent.repeat_interval if cfg.repeat_interval is None else cfg.repeat_interval
        ),
        mute_time_intervals=tuple(cfg.mute_time_intervals),
        active_time_intervals=tuple(cfg.active_time_intervals),
        hold_time_intervals=tuple(hold),
    )
    if opts.group_interval <= 0 or opts.repeat_interval <= 0:
        raise RouteError("group_interval and repeat_interval must be greater than zero")
    key = f"{key}{format_matchers(found)}"
    children = tuple(
        _build(child, opts, f"{key}/{i}", intervals, root=False)
        for i, child in enumerate(cfg.routes)
    )
    return RouteNode(key, found, opts, cfg.continue_, children)


def build_tree(cfg: Route, time_intervals: Iterable[str] | None = None) -> RouteNode:
    """The tree for a config's ``route``; ``time_intervals`` (names) checks references."""
    if not cfg.receiver:
        raise RouteError("the root route must name a receiver")
    if cfg.matchers:
        raise RouteError("the root route cannot have matchers")
    if cfg.continue_:
        raise RouteError("the root route cannot have continue")
    names = None if time_intervals is None else frozenset(time_intervals)
    return _build(cfg, RouteOpts(receiver=cfg.receiver, group_by=()), "", names, root=True)
