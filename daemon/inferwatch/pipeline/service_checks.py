"""One probe of one service: every configured check, each with its timeout, read through
``sources.service_probe`` and judged here. A check that cannot run here (no systemd, no docker,
sockets psutil may not see) is left out: it has no result rather than a failed one."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from inferwatch.config.models import ServiceConfig
from inferwatch.parsers.service_state import (
    UNIT_ALIVE,
    UNIT_RUNNING,
    listed_models,
    parse_container_state,
    parse_port_file,
    parse_unit_show,
)
from inferwatch.sources import service_probe as probe
from inferwatch.sources.service_probe import ProcessFacts

T = TypeVar("T")
RunBlocking = Callable[[Callable[[], T]], Awaitable[T]]
# the order checks are judged in: the first that failed names the failure
CHECKS = ("unit", "container", "signature", "port_file", "port", "http", "ws")


@dataclass(frozen=True, slots=True)
class CheckResult:
    check: str
    ok: bool
    seconds: float
    detail: str = ""


@dataclass(slots=True)
class Probe:
    """What one probe found: the checks' results and the service's main process."""

    results: list[CheckResult] = field(default_factory=list)
    main_pid: int | None = None
    alive: bool | None = None
    started_at: float | None = None

    def add(self, check: str, ok: bool, started: float, detail: str = "") -> None:
        self.results.append(CheckResult(check, ok, time.monotonic() - started, detail))

    @property
    def failed(self) -> CheckResult | None:
        return next((r for r in self.results if not r.ok), None)


class ServiceChecker:
    def __init__(self, cfg: ServiceConfig, run_blocking: Any, timeout: float) -> None:
        self.cfg = cfg
        self.timeout = timeout
        self._blocking = run_blocking
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:  # never through an environment proxy (host.md)
            self._client = httpx.AsyncClient(
                trust_env=False, timeout=httpx.Timeout(self.timeout), follow_redirects=False
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def probe(self) -> Probe:
        cfg, found = self.cfg, Probe()
        if cfg.unit or cfg.user_unit:
            await self._unit(found)
        if cfg.container:
            await self._container(found)
        if cfg.signature and not (cfg.unit or cfg.user_unit or cfg.container):
            found.main_pid = await self._blocking(lambda: probe.find_by_signature(cfg.signature))
            found.alive = found.main_pid is not None
        port, port_started, port_error = await self._port()
        pid, ports = found.main_pid, [port] if port is not None else []
        facts = await self._blocking(lambda: probe.process_facts(pid, ports))
        if facts.pid is not None:
            found.started_at = found.started_at or facts.started_at
            if found.alive is None:
                found.alive = True
        elif found.main_pid is not None and not cfg.container:
            found.alive = False  # the process named a moment ago is gone
        if cfg.signature:
            self._signature(found, facts)
        if cfg.port_file is not None:
            self._port_file(found, facts, port, port_started, port_error)
        if port is not None:
            self._port_owner(found, facts, port, port_started)
        if cfg.http_url:
            await self._http_check(found, port)
        if cfg.ws_url:
            await self._ws_check(found, port)
        return found

    async def _unit(self, found: Probe) -> None:
        unit, user = (self.cfg.unit, False) if self.cfg.unit else (self.cfg.user_unit, True)
        assert unit is not None
        started = time.monotonic()
        out = await probe.unit_show(unit, user=user, timeout=self.timeout)
        state = parse_unit_show(out.stdout) if out is not None and out.returncode == 0 else None
        if state is None:
            return  # no systemd (or no user bus) here: no result
        found.main_pid = state.main_pid or None
        found.alive = state.active in UNIT_ALIVE
        if state.load == "not-found":
            found.add("unit", False, started, f"unit {unit} does not exist")
        elif state.active in UNIT_RUNNING:
            found.add("unit", True, started)
        else:
            found.add("unit", False, started, f"unit {unit} is {state.summary}")

    async def _container(self, found: Probe) -> None:
        name = self.cfg.container
        assert name is not None
        started = time.monotonic()
        out = await probe.container_inspect(name, self.timeout)
        if out is None:
            return
        if out.returncode != 0:
            if "no such" in out.stderr.lower():
                found.alive = False
                found.add("container", False, started, f"container {name} does not exist")
            return  # docker's daemon is not reachable: no result
        state = parse_container_state(out.stdout)
        if state is None:
            return
        found.main_pid = state.pid or None
        found.alive = state.running or state.status == "restarting"
        found.started_at = state.started_at
        if not state.running:
            detail = f"container {name} is {state.status} (exit code {state.exit_code})"
            found.add("container", False, started, detail)
        elif state.health not in ("", "healthy"):
            found.add("container", False, started, f"container {name} is {state.health}")
        else:
            found.add("container", True, started)

    async def _port(self) -> tuple[int | None, float, str]:
        started = time.monotonic()
        if self.cfg.port_file is None:
            return self.cfg.port, started, ""
        path = str(self.cfg.port_file)
        text = await self._blocking(lambda: probe.read_text(path))
        if text is None:
            return None, started, f"port file {path} is missing"
        port = parse_port_file(text)
        return port, started, "" if port else f"port file {path} holds no port"

    def _signature(self, found: Probe, facts: ProcessFacts) -> None:
        sig, started = self.cfg.signature or "", time.monotonic()
        if facts.pid is None:
            found.add(
                "signature", False, started, f"no running process has {sig!r} in its command line"
            )
        elif any(sig in c for c in facts.tree_cmdlines):
            found.add("signature", True, started)
        else:
            detail = f"wrong signature: pid {facts.pid} runs {facts.cmdline!r}, without {sig!r}"
            found.add("signature", False, started, detail)

    def _port_file(
        self, found: Probe, facts: ProcessFacts, port: int | None, started: float, error: str
    ) -> None:
        path = str(self.cfg.port_file)
        if port is None:
            found.add("port_file", False, started, error)
            return
        mtime = probe.file_mtime(path)
        if port not in facts.listeners:
            found.add(
                "port_file", False, started, f"stale port file {path}: nothing listens on {port}"
            )
        elif facts.started_at is not None and mtime is not None and mtime < facts.started_at - 1:
            detail = f"stale port file {path}: written before pid {facts.pid} started"
            found.add("port_file", False, started, detail)
        else:
            found.add("port_file", True, started)

    def _port_owner(self, found: Probe, facts: ProcessFacts, port: int, started: float) -> None:
        owner_known = found.main_pid is not None and not self.cfg.container
        if not owner_known or facts.pid is None:
            ok = port in facts.listeners
            found.add("port", ok, started, "" if ok else f"nothing listens on port {port}")
        elif port in facts.tree_ports:
            found.add("port", True, started)
        elif port not in facts.listeners:
            found.add("port", False, started, f"nothing listens on port {port}")
        elif not facts.tree_readable:
            return  # its sockets are hidden from this user: no result
        else:
            other = facts.listeners[port]
            who = f"pid {other}" if other is not None else "another process"
            detail = f"port {port} is not the service's: {who} listens on it, not pid {facts.pid}"
            found.add("port", False, started, detail)

    def _url(self, template: str, port: int | None) -> str | None:
        if "{port}" not in template:
            return template
        return template.replace("{port}", str(port)) if port is not None else None

    async def _http_check(self, found: Probe, port: int | None) -> None:
        started = time.monotonic()
        url = self._url(self.cfg.http_url or "", port)
        if url is None:
            found.add("http", False, started, "no port known for http_url")
            return
        answer = await probe.http_get(self._http(), url)
        if answer.status is None:
            found.add("http", False, started, f"HTTP {url}: {answer.error}")
        elif answer.status != httpx.codes.OK:
            found.add("http", False, started, f"HTTP {url} answered {answer.status}")
        elif self.cfg.expect_model is not None:
            models = listed_models(answer.body)
            if models is None:
                found.add("http", False, started, f"HTTP {url} is not a /v1/models list")
            elif self.cfg.expect_model not in models:
                detail = f"HTTP {url} does not list {self.cfg.expect_model!r} ({', '.join(models)})"
                found.add("http", False, started, detail)
            else:
                found.add("http", True, started)
        else:
            found.add("http", True, started)

    async def _ws_check(self, found: Probe, port: int | None) -> None:
        started = time.monotonic()
        url = self._url(self.cfg.ws_url or "", port)
        error = (
            "no port known for ws_url"
            if url is None
            else await probe.ws_handshake(url, self.timeout)
        )
        found.add("ws", not error, started, f"WebSocket {url}: {error}" if error else "")
