"""Which keys of a channel's config entry the channel actually read.

Channels parse their ``<kind>_configs`` entries with plain ``raw.get(...)`` calls, so a key no
channel asks for (a typo such as ``send_resolvd``, or Alertmanager's ``http_config.oauth2``,
which inferwatch does not implement) would be ignored without a word. :func:`unread_keys`
builds an entry through a :class:`ReadTracker` and returns every key path that was never looked
up, so ``notify.validate`` can refuse each one at its place in the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from inferwatch.config.suggest import did_you_mean

KeyPath = tuple[str, ...]

# Alertmanager's http_config and integration fields that inferwatch knows of but does not
# implement: named as such rather than as typos.
UNSUPPORTED: dict[KeyPath, str] = {
    ("http_config", key): "not supported: inferwatch does not implement http_config." + key
    for key in (
        "oauth2",
        "enable_http2",
        "no_proxy",
        "proxy_from_environment",
        "proxy_connect_header",
        "http_headers",
    )
}


class ReadTracker(Mapping[str, Any]):
    """A read-only view of a config mapping that records each key looked up (nested mappings
    are tracked too, under their key path)."""

    def __init__(self, data: Mapping[str, Any], seen: set[KeyPath], at: KeyPath = ()) -> None:
        self._data = data
        self._seen = seen
        self._at = at

    def __getitem__(self, key: str) -> Any:
        path = (*self._at, str(key))
        self._seen.add(path)
        value = self._data[key]
        if isinstance(value, Mapping):
            return ReadTracker(value, self._seen, path)
        return value

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self._seen.add((*self._at, key))
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def unread_keys(
    build: Callable[[Mapping[str, Any]], object], entry: Mapping[str, Any]
) -> list[KeyPath]:
    """Build ``entry`` with ``build`` (its errors propagate) and return the key paths of
    ``entry`` that ``build`` never read, in file order."""
    return [path for path, _ in unread_problems(build, entry)]


def unread_problems(
    build: Callable[[Mapping[str, Any]], object], entry: Mapping[str, Any]
) -> list[tuple[KeyPath, str]]:
    """:func:`unread_keys` with why each is refused, and the nearest key the channel reads at
    that place when one is close (``send_resolvd`` → "did you mean send_resolved?")."""
    seen: set[KeyPath] = set()
    build(ReadTracker(entry, seen))
    out = []
    for path in _unread(entry, seen, ()):
        why = describe(path)
        if path not in UNSUPPORTED:
            read_here = [p[-1] for p in seen if p[:-1] == path[:-1]]
            why += did_you_mean(path[-1], sorted(read_here))
        out.append((path, why))
    return out


def _unread(data: Mapping[str, Any], seen: set[KeyPath], at: KeyPath) -> Iterator[KeyPath]:
    for key, value in data.items():
        path = (*at, str(key))
        if path not in seen:
            yield path
        elif isinstance(value, Mapping):
            yield from _unread(value, seen, path)


def describe(path: KeyPath) -> str:
    """Why an unread key is refused: a known Alertmanager feature inferwatch lacks, or unknown."""
    return UNSUPPORTED.get(path, "unknown key")
