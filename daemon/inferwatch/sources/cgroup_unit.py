"""The systemd unit a process runs in, from the text of its ``/proc/PID/cgroup``.

A pure function over the file's text (the reading is the caller's). The file has one
``hierarchy-ID:controllers:path`` line per hierarchy: cgroup v2 has only ``0::/path``; v1 has a
line per controller, and systemd's own is ``N:name=systemd:/path``; a hybrid host has both.
systemd names each unit's cgroup after the unit, so the innermost path component that is a unit
name is the unit: ``/system.slice/flashnext.service`` → ``flashnext.service``; a user unit
``/user.slice/user-1000.slice/user@1000.service/app.slice/x.service`` → ``x.service``; a login
session ``session-2.scope``; a container ``docker-<id>.scope``. A process in a sub-cgroup a unit
made for itself (``/system.slice/x.service/payload``) still belongs to ``x.service``.

Two kernel details matter for dead processes: on cgroup v2 a zombie keeps naming its cgroup and
gets `` (deleted)`` appended once the cgroup is removed (the unit was stopped); on v1 a zombie
reads as the root ``/`` (no unit).
"""

from __future__ import annotations

# Unit types whose cgroups hold processes (slices only hold other cgroups).
_UNIT_TYPES = frozenset({"service", "scope", "socket", "mount", "swap"})
_DELETED = " (deleted)"


def unit_from_cgroup(text: str) -> str:
    """The innermost systemd unit named by ``/proc/PID/cgroup`` text; ``""`` when none."""
    v2 = v1 = ""
    for line in text.splitlines():
        hierarchy, sep, rest = line.partition(":")
        controllers, sep2, path = rest.partition(":")
        if not (sep and sep2):
            continue
        if hierarchy == "0" and controllers == "":
            v2 = path
        elif "name=systemd" in controllers.split(","):
            v1 = path
    return _innermost_unit(v2) or _innermost_unit(v1)


def _innermost_unit(path: str) -> str:
    path = path.removesuffix(_DELETED)
    for part in reversed(path.split("/")):
        stem, _, unit_type = part.rpartition(".")
        if stem and unit_type in _UNIT_TYPES:
            return part
    return ""
