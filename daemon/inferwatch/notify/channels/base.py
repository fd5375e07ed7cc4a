"""What every channel is: something that sends one payload and says how it went.

A notifier never retries and never raises for a failed send: it returns an
:class:`~inferwatch.notify.retry.Outcome` (ok, retry with an optional hint, permanent) and the
delivery stage decides what happens next (style.md §2 item 9). Channel kinds are looked up in
:data:`REGISTRY` by their config key (``webhook_configs`` → ``webhook``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from inferwatch.notify.retry import Outcome


class Notifier(Protocol):
    """One configured channel instance."""

    @property
    def integration(self) -> str:
        """The channel kind (``webhook``, ``alertmanager``...), for metrics and the outbox."""
        ...

    async def notify(
        self, payload: Mapping[str, Any], idempotency_key: str | None = None
    ) -> Outcome: ...

    async def aclose(self) -> None: ...


NotifierFactory = Callable[[Mapping[str, Any]], Notifier]
"""Builds a notifier from one entry of a receiver's ``<kind>_configs`` list."""

REGISTRY: dict[str, NotifierFactory] = {}


def register(kind: str, factory: NotifierFactory) -> None:
    if kind in REGISTRY and REGISTRY[kind] is not factory:
        raise ValueError(f"notifier kind {kind!r} is already registered")
    REGISTRY[kind] = factory


def build(kind: str, config: Mapping[str, Any]) -> Notifier:
    try:
        factory = REGISTRY[kind]
    except KeyError:
        raise ValueError(f"unknown notifier kind {kind!r}; known: {sorted(REGISTRY)}") from None
    return factory(config)
