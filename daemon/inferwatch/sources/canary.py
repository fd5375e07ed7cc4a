"""The canary's request: one streaming chat completion to an engine's OpenAI-compatible API.

It only reads: the lines of the server-sent-event stream, each with the seconds since the
request was sent, for ``parsers.openai_stream`` to read. Proxy variables are ignored
(``trust_env=False``, reference/host.md). A request that cannot be made or is refused comes back
with ``error`` set; it is not the canary's verdict.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import httpx

MAX_LINES = 4096


@dataclass(frozen=True, slots=True)
class StreamReading:
    lines: list[tuple[float, str]] = field(default_factory=list)  # (seconds since sent, line)
    seconds: float = 0.0  # the whole request
    error: str = ""


async def stream_chat(
    client: httpx.AsyncClient, url: str, body: dict[str, object]
) -> StreamReading:
    """POST ``body`` (``stream: true``) to ``url``; the stream's lines as they arrived."""
    sent = time.monotonic()
    lines: list[tuple[float, str]] = []
    try:
        async with client.stream("POST", url, json=body) as response:
            if response.status_code != httpx.codes.OK:
                await response.aread()
                detail = response.text[:200]
                return StreamReading(error=f"{url} answered {response.status_code}: {detail}")
            async for line in response.aiter_lines():
                if line:
                    lines.append((time.monotonic() - sent, line))
                if len(lines) >= MAX_LINES:
                    break
    except httpx.HTTPError as exc:
        return StreamReading(error=f"{type(exc).__name__}: {exc}".rstrip(": "))
    return StreamReading(lines, time.monotonic() - sent)
