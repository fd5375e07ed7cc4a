"""What every HTTP channel shares: its own httpx client (environment proxies ignored unless the
receiver's ``http_config.proxy_url`` names one), the ``send_resolved`` and ``max_alerts``
filters, and closing. Configs inherit :class:`~.common.CommonOptions`.

One base class and one credential reader instead of the same lines in each service's module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

import httpx

from inferwatch.clock import SYSTEM_CLOCK, Clock
from inferwatch.notify.channels.common import CommonOptions
from inferwatch.notify.payload import truncate, without_resolved
from inferwatch.redact import register_secret

C = TypeVar("C", bound=CommonOptions)


class HttpChannel(Generic[C]):
    def __init__(self, config: C, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.clock = clock
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                trust_env=False, proxy=self.config.proxy_url, timeout=self.config.timeout
            )
        return self._client

    def _group(self, payload: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The payload to announce, without resolved alerts if the receiver does not want them
        and cut to ``max_alerts``; None when nothing is left to send."""
        kept = payload if self.config.send_resolved else without_resolved(payload)
        return None if kept is None else truncate(kept, self.config.max_alerts)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def secret_or_file(
    value: str | None, path: Path | None, register: Callable[[str], None] = register_secret
) -> str:
    """A credential given inline or as an Alertmanager-style ``*_file`` (read at each send, so a
    rotated token is picked up), registered with the redactor either way."""
    if value is not None:
        return value
    if path is None:
        raise ValueError("neither the value nor its _file is set")
    read = path.read_text(encoding="utf-8").strip()
    register(read)
    return read


def optional_secret(value: str | None, path: Path | None) -> str | None:
    """:func:`secret_or_file` for a credential that may be absent (None when neither is set)."""
    return None if value is None and path is None else secret_or_file(value, path)
