"""An OpenAI-compatible streaming chat completion (server-sent events), read into what the canary
judges: the text, when its first token arrived, and how many tokens came (the server's
``usage`` when it sends one, else one per content event, which under-counts speculative
decoding's multi-token events: reference/host.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StreamAnswer:
    text: str
    first_token_s: float | None  # seconds from the request to the first content
    last_token_s: float | None
    tokens: int
    tokens_from_usage: bool


def parse_chat_stream(lines: list[tuple[float, str]]) -> StreamAnswer:
    parts: list[str] = []
    first: float | None = None
    last: float | None = None
    events = 0
    usage: int | None = None
    for at, line in lines:
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            break
        try:
            doc = json.loads(data)
        except ValueError:
            continue
        if not isinstance(doc, dict):
            continue
        tokens = (doc.get("usage") or {}).get("completion_tokens")
        if isinstance(tokens, int):
            usage = tokens
        for choice in doc.get("choices") or ():
            delta = choice.get("delta") if isinstance(choice, dict) else None
            content = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(content, str) and content:
                parts.append(content)
                events += 1
                first = at if first is None else first
                last = at
    count = usage if usage is not None else events
    return StreamAnswer("".join(parts), first, last, count, usage is not None)
