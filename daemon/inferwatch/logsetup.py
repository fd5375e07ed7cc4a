"""structlog configuration: JSON lines on stderr under systemd/pipes, console on a TTY.

A redaction processor runs last before rendering, always, so no secret reaches the journal.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any, cast

from inferwatch.redact import redact_obj

if TYPE_CHECKING:
    import structlog


def _redact(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    return {k: redact_obj(v) if k != "exc_info" else v for k, v in event.items()}


def configure_logging(level: str = "info", *, json: bool | None = None) -> None:
    """Set up structlog; ``json`` defaults to True unless stderr is a terminal."""
    import structlog  # noqa: PLC0415 (see get_logger)

    if json is None:
        json = not sys.stderr.isatty() or "JOURNAL_STREAM" in os.environ
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if json
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    # httpx logs every request URL at INFO, and URLs carry keys (WeCom ?key=, Telegram /bot<token>).
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            _redact,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
        ),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


class _Deferred:
    """A module's logger that imports structlog when it first logs: a command that never
    logs (``replay``) starts without it (structlog pulls in its console renderer)."""

    __slots__ = ("_logger", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: Any = None

    def __getattr__(self, attr: str) -> Any:
        logger = self._logger
        if logger is None:
            import structlog  # noqa: PLC0415

            logger = self._logger = structlog.get_logger(self._name)
        return getattr(logger, attr)


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    return cast("structlog.stdlib.BoundLogger", _Deferred(name))
