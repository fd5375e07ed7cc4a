"""The notification part of a config, checked beyond field types: every part must build.

:func:`validate` runs after model validation (``inferwatch.configfile`` passes it to the config
loader), so ``inferwatch check`` (and the daemon at start and on SIGHUP) reports a bad route
matcher, an unknown time interval, a bad inhibit rule or maintenance-file matcher at its place
in the file, instead of the daemon failing later. notify owns these checks: config knows
nothing of notify, so it accepts any ``<kind>_configs`` list in a receiver and the kinds that
exist are checked here, against the channel registry (the one list of channels), and so is
every key of an integration entry: one its channel never reads is refused, not ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC
from typing import Any

from inferwatch.config.models import Config
from inferwatch.config.yamlpos import Located, format_loc
from inferwatch.errors import Problem
from inferwatch.notify.channels import REGISTRY, build
from inferwatch.notify.channels.common import common_from_mapping, with_defaults
from inferwatch.notify.channels.keys import describe, unread_keys, unread_problems
from inferwatch.notify.channels.templating import TemplateProblems
from inferwatch.notify.digest.schedule import cron_trigger, digest_zone
from inferwatch.notify.inhibit import InhibitionRule
from inferwatch.notify.route import build_tree
from inferwatch.notify.silence import FlagFile
from inferwatch.notify.timeintervals import load_intervals

Loc = tuple[str | int, ...]


def validate(config: Config, located: Located, name: str) -> list[Problem]:
    problems: list[Problem] = []

    def check(loc: Loc, build: Callable[[], object]) -> None:
        try:
            build()
        except ValueError as exc:
            line, col = located.position(loc)
            problems.append(Problem(name, line, col, format_loc(loc), str(exc)))

    names: list[str] = []

    def intervals() -> None:
        names.extend(load_intervals(config.time_intervals))

    check(("time_intervals",), intervals)
    check(("route",), lambda: build_tree(config.route, names))
    for i, rule in enumerate(config.inhibit_rules):
        check(("inhibit_rules", i), lambda rule=rule: InhibitionRule.from_config(rule))  # type: ignore[misc]
    for i, flag in enumerate(config.silence_files):
        check(("silence_files", i), lambda flag=flag: FlagFile.from_config(flag))  # type: ignore[misc]
    for i, receiver in enumerate(config.receivers):
        for key, items in receiver.integrations().items():
            if key.removesuffix("_configs") not in REGISTRY:
                check(("receivers", i, key), lambda k=key: _unknown(k))  # type: ignore[misc]
                continue
            for j, item in enumerate(items):
                problems.extend(_entry_problems(key, item, config, located, name, (i, j)))
    problems.extend(_digest_problems(config, located, name))
    problems.extend(_global_http_problems(config, located, name))
    return problems


def _global_http_problems(config: Config, located: Located, name: str) -> list[Problem]:
    """``global.http_config``, the default of every entry without its own, checked as one."""
    raw = config.global_.http_config
    if not raw:
        return []
    loc: Loc = ("global", "http_config")
    try:
        unread = unread_keys(lambda tracked: common_from_mapping({"http_config": tracked}), raw)
    except ValueError as exc:
        at: Loc = (*loc, *_present(raw, getattr(exc, "at", ())[1:]))
        line, col = located.position(at)
        return [Problem(name, line, col, format_loc(at), str(exc))]
    problems: list[Problem] = []
    for path in unread:
        line, col = located.position((*loc, *path))
        problems.append(
            Problem(name, line, col, format_loc((*loc, *path)), describe(("http_config", *path)))
        )
    return problems


def _unknown(key: str) -> object:
    known = ", ".join(f"{kind}_configs" for kind in REGISTRY)
    raise ValueError(f"unknown integration {key!r}; integrations: {known}")


def _entry_problems(
    key: str,
    item: Mapping[str, Any],
    config: Config,
    located: Located,
    name: str,
    at: tuple[int, int],
) -> list[Problem]:
    """Build one integration as the daemon will (missing key, bad template, bad option); when
    it builds, every key of ``item`` it never read is refused at its own place."""
    loc: Loc = ("receivers", at[0], key, at[1])
    entry = with_defaults(item, config.language, config.global_.http_config)
    kind = key.removesuffix("_configs")
    try:
        unread = unread_problems(lambda raw: build(kind, raw), entry)
    except TemplateProblems as exc:  # every broken template, each at its key
        out = []
        for key_name, message in exc.problems:
            line, col = located.position((*loc, key_name))
            out.append(Problem(name, line, col, format_loc((*loc, key_name)), message))
        return out
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        message = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
        if getattr(exc, "at", ("",))[0] == "http_config" and "http_config" not in item:
            return []  # global.http_config's own problem, reported at its place
        where: Loc = (*loc, *_present(item, getattr(exc, "at", ())))
        line, col = located.position(where)
        return [Problem(name, line, col, format_loc(where), message)]
    problems: list[Problem] = []
    for path, why in unread:
        if path[0] not in item:  # the language or global.http_config, checked on their own
            continue
        line, col = located.position((*loc, *path))
        problems.append(Problem(name, line, col, format_loc((*loc, *path)), why))
    return problems


def _present(item: Mapping[str, Any], path: tuple[str, ...]) -> tuple[str, ...]:
    """The longest prefix of ``path`` (an error's key path) that ``item`` holds."""
    found: list[str] = []
    node: Any = item
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            break
        found.append(key)
        node = node[key]
    return tuple(found)


def _digest_problems(config: Config, located: Located, name: str) -> list[Problem]:
    """A digest needs a cron expression and a zone APScheduler accepts, a known receiver (or a
    root route receiver to fall back on) and a name of its own (it names the scheduler job)."""
    problems: list[Problem] = []

    def report(loc: Loc, message: str) -> None:
        line, col = located.position(loc)
        problems.append(Problem(name, line, col, format_loc(loc), message))

    receivers = {r.name for r in config.receivers}
    seen: set[str] = set()
    for i, digest in enumerate(config.digests):
        if digest.name in seen:
            report(("digests", i, "name"), f"digest name {digest.name!r} is used twice")
        seen.add(digest.name)
        try:
            tz = digest_zone(digest.timezone)
        except ValueError as exc:
            report(("digests", i, "timezone"), str(exc))
            tz = None
        try:
            cron_trigger(digest.cron, tz or UTC)
        except ValueError as exc:
            report(("digests", i, "cron"), str(exc))
        receiver = digest.receiver or config.route.receiver
        if digest.receiver and digest.receiver not in receivers:
            report(("digests", i, "receiver"), f"receiver {digest.receiver!r} is not defined")
        elif not receiver:
            report(("digests", i), "no receiver: set digests[].receiver or route.receiver")
    return problems
