"""structlog configuration: JSON lines on stderr under systemd/pipes, console on a TTY.

A redaction processor runs last before rendering, always, so no secret reaches the journal.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

from inferwatch.redact import redact_obj


def _redact(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    return {k: redact_obj(v) if k != "exc_info" else v for k, v in event.items()}


def configure_logging(level: str = "info", *, json: bool | None = None) -> None:
    """Set up structlog; ``json`` defaults to True unless stderr is a terminal."""
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


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    logger: structlog.stdlib.BoundLogger = structlog.get_logger(name)
    return logger
