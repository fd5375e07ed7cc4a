"""The command line's side of the HTTP API (``status``, ``silence``, ``events``, ``digest``).

The daemon is found at ``--listen`` when given, else at the config's ``listen`` (the same
config the daemon reads: ``--config``, else /etc/inferwatch/config.yaml, else the embedded
default 127.0.0.1:9945). A daemon bound to every address (``0.0.0.0``, ``::``) is reached on
loopback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

from inferwatch.config.types import split_listen

if TYPE_CHECKING:
    from inferwatch.export.apiclient import ApiTarget

TIMEOUT_S = 10.0


class DaemonError(Exception):
    """The daemon could not be reached, or refused the request (the message says which)."""


def base_url(listen: str) -> str:
    host, port = split_listen(listen)
    if host in ("", "0.0.0.0"):  # noqa: S104 (the wildcard is read, not bound)
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def get_json(target: ApiTarget, path: str, params: dict[str, str] | None = None) -> Any:
    """GET ``path`` and decode its JSON; :class:`DaemonError` with a readable reason."""
    url = target.base + path
    try:
        with target.client() as client:
            response = client.get(url, params=params, extensions=target.extensions())
    except (httpx.HTTPError, OSError) as exc:
        raise DaemonError(f"cannot reach inferwatch at {target.base}: {exc}") from None
    if response.status_code == 401:
        raise DaemonError(
            f"{url}: the daemon asks for credentials: give --http.config.file (basic_auth) or "
            "set $INFERWATCH_HTTP_CONFIG_FILE"
        )
    try:
        doc = response.json()
    except ValueError:
        doc = None
    if response.status_code >= 400:
        reason = doc.get("error") if isinstance(doc, dict) else response.text.strip()[:200]
        raise DaemonError(f"{url}: {response.status_code} {reason}")
    if doc is None:
        raise DaemonError(f"{url}: the answer is not JSON")
    return doc


__all__ = ["DaemonError", "base_url", "get_json"]
