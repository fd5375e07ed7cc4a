"""Cross-references in a config file: every receiver a route or ``fallback_receiver`` names is
defined, engine and service names are unique, and a service's ``engine`` is a configured one.

Checked on the file's raw mapping, not on the validated model, so ``inferwatch check`` reports
them in the same pass as every other problem (a model validator runs only once all fields are
valid) and each at its own place: an undefined receiver at the route's ``receiver`` line.
"""

from __future__ import annotations

from typing import Any

from inferwatch.config.yamlpos import Located, format_loc
from inferwatch.errors import Problem

Loc = tuple[str | int, ...]
DEFAULT_RECEIVERS = ("console",)  # the embedded default receivers (config.models.Config)


def reference_problems(data: dict[str, Any], located: Located, name: str) -> list[Problem]:
    problems: list[Problem] = []

    def report(loc: Loc, message: str) -> None:
        line, col = located.position(loc)
        problems.append(Problem(name, line, col, format_loc(loc), message))

    receivers = _receiver_names(data)
    for loc, ref in _route_refs(data.get("route"), ("route",)):
        if receivers is not None and ref not in receivers:
            report(loc, f"receiver {ref!r} is not defined{_known(receivers)}")
    fallback = data.get("fallback_receiver")
    if isinstance(fallback, str) and receivers is not None and fallback not in receivers:
        report(("fallback_receiver",), f"receiver {fallback!r} is not defined{_known(receivers)}")
    for key, what in (("engines", "engine"), ("services", "service")):
        entries = data.get(key)
        if not isinstance(entries, list):
            continue
        seen: set[str] = set()
        for i, entry in enumerate(entries):
            entry_name = entry.get("name") if isinstance(entry, dict) else None
            if isinstance(entry_name, str):
                if entry_name in seen:
                    report((key, i, "name"), f"{what} name {entry_name!r} is used twice")
                seen.add(entry_name)
    engines = data.get("engines")
    services = data.get("services")
    if isinstance(engines, list) and engines and isinstance(services, list):
        names = {e.get("name") for e in engines if isinstance(e, dict)}
        for i, service in enumerate(services):
            served = service.get("engine") if isinstance(service, dict) else None
            if isinstance(served, str) and served not in names:
                known = ", ".join(sorted(str(n) for n in names if isinstance(n, str)))
                report(
                    ("services", i, "engine"),
                    f"engine {served!r} is not defined (engines: {known})",
                )
    return problems


def _receiver_names(data: dict[str, Any]) -> set[str] | None:
    """The defined receiver names; None when the list is too broken to judge references."""
    items = data.get("receivers", [{"name": n} for n in DEFAULT_RECEIVERS])
    if not isinstance(items, list):
        return None
    return {item["name"] for item in items if isinstance(item, dict) and "name" in item}


def _route_refs(node: object, at: Loc) -> list[tuple[Loc, str]]:
    if not isinstance(node, dict):
        return []
    found: list[tuple[Loc, str]] = []
    ref = node.get("receiver")
    if isinstance(ref, str) and ref:
        found.append(((*at, "receiver"), ref))
    children = node.get("routes")
    if isinstance(children, list):
        for i, child in enumerate(children):
            found.extend(_route_refs(child, (*at, "routes", i)))
    return found


def _known(receivers: set[str]) -> str:
    return f" (receivers: {', '.join(sorted(map(str, receivers)))})" if receivers else ""


__all__ = ["reference_problems"]
