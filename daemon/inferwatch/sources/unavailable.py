"""A source that exists only to say, loudly and once, that an input cannot be read here."""

from __future__ import annotations

from inferwatch.errors import NoData
from inferwatch.sources.base import Emit


class Unavailable:
    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason

    async def run(self, emit: Emit) -> None:
        raise NoData(self.reason)
