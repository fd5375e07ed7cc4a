"""A follower process (``journalctl -f``, ``docker logs -f``): starting it, reading its lines,
stopping it, and how long to wait before starting it again after it ended."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from inferwatch.errors import NoData

MAX_RESTART_DELAY = 30.0


async def spawn(
    command: Sequence[str], *, limit: int, merge_stderr: bool
) -> asyncio.subprocess.Process:
    """Start ``command`` with its output piped (stderr into stdout with ``merge_stderr``);
    a program that cannot be run here is :class:`NoData`."""
    try:
        return await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT if merge_stderr else asyncio.subprocess.PIPE,
            limit=limit,
        )
    except (FileNotFoundError, PermissionError) as exc:
        raise NoData(f"cannot run {command[0]}: {exc.strerror}") from None


def restart_delay(base: float, idle: int) -> float:
    """The pause before the next run after ``idle`` runs in a row that delivered nothing."""
    return min(base * 2.0**idle, MAX_RESTART_DELAY)


async def lines(stream: asyncio.StreamReader) -> AsyncIterator[bytes | None]:
    """The stream's lines to its end; None for one longer than the stream's limit (skipped, for
    the caller to count)."""
    while True:
        try:
            raw = await stream.readline()
        except ValueError:
            yield None
            continue
        if not raw:
            return
        yield raw


async def stop(proc: asyncio.subprocess.Process) -> None:
    """End the process if it still runs (the follower was cancelled or failed)."""
    if proc.returncode is None:
        proc.kill()
        await proc.wait()
