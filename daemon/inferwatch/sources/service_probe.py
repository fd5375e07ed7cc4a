"""Reading what a service's readiness checks need: a unit's or container's state (as the text
``systemctl show`` and ``docker inspect`` print), its processes (psutil), the owner of a port, and
an HTTP or WebSocket handshake. Every read has a timeout and only looks: nothing here restarts,
signals or loads what it watches.

A read that cannot run here (no ``systemctl``, no systemd bus, no ``docker``) returns ``None``:
the check has no result, not a failed one. A failing service is a result, never an exception.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import httpx
import psutil

UNIT_PROPERTIES = "LoadState,ActiveState,SubState,MainPID,NRestarts,ExecMainStatus,Result"
CONTAINER_FORMAT = "{{json .State}}\t{{.RestartCount}}"
MAX_BODY = 1024 * 1024
CMDLINE_SHOWN = 200


@dataclass(frozen=True, slots=True)
class CommandOutput:
    """What a state command printed, or why it failed (``returncode`` non-zero)."""

    returncode: int
    stdout: str
    stderr: str


async def run_command(command: Sequence[str], timeout: float) -> CommandOutput | None:
    """Run ``command`` to its end within ``timeout``; None when it cannot run here."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except (FileNotFoundError, PermissionError):
        return None
    try:
        async with asyncio.timeout(timeout):
            out, err = await proc.communicate()
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return CommandOutput(-1, "", f"{command[0]} did not answer within {timeout:g}s")
    code = proc.returncode if proc.returncode is not None else -1
    return CommandOutput(code, out.decode(errors="replace"), err.decode(errors="replace"))


async def unit_show(unit: str, *, user: bool, timeout: float) -> CommandOutput | None:
    scope = ("--user",) if user else ()
    command = ("systemctl", *scope, "show", "-p", UNIT_PROPERTIES, "--", unit)
    return await run_command(command, timeout)


async def container_inspect(name: str, timeout: float) -> CommandOutput | None:
    command = ("docker", "inspect", "--type", "container", "--format", CONTAINER_FORMAT, name)
    return await run_command(command, timeout)


@dataclass(frozen=True, slots=True)
class ProcessFacts:
    """The service's main process and what it listens on, as psutil sees them."""

    pid: int | None = None  # the main process (None: none found)
    started_at: float | None = None
    cmdline: str = ""
    tree_cmdlines: tuple[str, ...] = ()  # the main process's and its descendants'
    tree_ports: frozenset[int] = frozenset()  # ports the tree listens on
    tree_readable: bool = True  # False: psutil was denied the tree's sockets
    listeners: dict[int, int | None] = field(default_factory=dict)  # port -> pid (None: unseen)


def _cmdline(proc: psutil.Process) -> str:
    try:
        return " ".join(proc.cmdline())
    except (psutil.Error, OSError):
        return ""


def find_by_signature(signature: str) -> int | None:
    """The oldest process whose command line contains ``signature`` (not this one)."""
    found: list[tuple[float, int]] = []
    me = psutil.Process().pid
    for proc in psutil.process_iter(["cmdline", "create_time"]):
        try:
            cmdline = " ".join(proc.info["cmdline"] or ())
        except (psutil.Error, OSError):
            continue
        if proc.pid != me and signature in cmdline:
            found.append((float(proc.info["create_time"] or 0.0), proc.pid))
    return min(found)[1] if found else None


def _listening_ports(proc: psutil.Process) -> set[int]:
    read = getattr(proc, "net_connections", None) or proc.connections
    return {c.laddr.port for c in read(kind="inet") if c.status == psutil.CONN_LISTEN and c.laddr}


def listeners(ports: Sequence[int]) -> dict[int, int | None]:
    """Which of ``ports`` someone listens on (TCP), with the pid when psutil may see it."""
    wanted = set(ports)
    found: dict[int, int | None] = {}
    if not wanted:
        return found
    try:
        conns = psutil.net_connections(kind="tcp")
    except (psutil.AccessDenied, OSError):
        return found
    for c in conns:
        port = c.laddr.port if c.laddr else None
        if c.status == psutil.CONN_LISTEN and port in wanted and found.get(port) is None:
            found[port] = c.pid
    return found


def process_facts(pid: int | None, ports: Sequence[int]) -> ProcessFacts:
    """Facts about ``pid`` and its descendants, and who listens on ``ports`` (blocking)."""
    seen = listeners(ports)
    if pid is None or pid <= 0:
        return ProcessFacts(listeners=seen)
    try:
        main = psutil.Process(pid)
        tree = [main, *main.children(recursive=True)]
        started = main.create_time()
    except (psutil.Error, OSError):
        return ProcessFacts(listeners=seen)
    ports_seen: set[int] = set()
    readable = True
    for proc in tree:
        try:
            ports_seen |= _listening_ports(proc)
        except psutil.AccessDenied:
            readable = False
        except (psutil.Error, OSError):
            continue
    return ProcessFacts(
        pid=pid,
        started_at=started,
        cmdline=_cmdline(main)[:CMDLINE_SHOWN],
        tree_cmdlines=tuple(_cmdline(p) for p in tree),
        tree_ports=frozenset(ports_seen),
        tree_readable=readable,
        listeners=seen,
    )


def file_mtime(path: str) -> float | None:
    try:
        return Path(path).stat().st_mtime
    except OSError:
        return None


@dataclass(frozen=True, slots=True)
class HttpAnswer:
    status: int | None  # None: no answer (``error`` says why)
    body: bytes = b""
    error: str = ""


async def http_get(client: httpx.AsyncClient, url: str) -> HttpAnswer:
    try:
        response = await client.get(url)
    except httpx.HTTPError as exc:
        return HttpAnswer(None, error=f"{type(exc).__name__}: {exc}".rstrip(": "))
    return HttpAnswer(response.status_code, response.content[:MAX_BODY])


async def ws_handshake(url: str, timeout: float) -> str:
    """Open and close a WebSocket at ``url``; the error, or "" when the handshake succeeded."""
    try:
        limit = aiohttp.ClientTimeout(total=timeout)
        async with (
            aiohttp.ClientSession(trust_env=False, timeout=limit) as session,
            session.ws_connect(url) as ws,
        ):
            await ws.close()
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        return f"{type(exc).__name__}: {exc}".rstrip(": ")
    return ""


def read_text(path: str, limit: int = 4096) -> str | None:
    """A small file's text (a port file), or None when it cannot be read."""
    try:
        with Path(path).open(encoding="utf-8", errors="replace") as f:
            return f.read(limit)
    except OSError:
        return None
