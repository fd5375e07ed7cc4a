"""Notification channels, one module per service, registered by config kind.

The registry below is the one list of channels: a receiver's ``<kind>_configs`` key is valid
exactly when ``kind`` is registered here (``notify.validate`` reports any other at its place in
the config file; the config models accept every ``*_configs`` list, since config must not
import notify).

Adding a channel = one module here + one registry line + its emulator test:

- the module holds the config (a dataclass inheriting :class:`~.common.ChatOptions`, or
  :class:`~.common.CommonOptions` for a non-chat channel, parsed by ``from_mapping``) and an
  :class:`~.http_channel.HttpChannel` subclass that supplies only its :class:`~.http_channel.Post`
  (URL, headers, body) and, when the provider answers 2xx even as it refuses, its
  :class:`~.http_channel.ResultCode` or ``verdict``; grouping, retry classification and
  redaction are :class:`~.http_channel.HttpChannel`'s;
- the registry line is the kind's name in ``KINDS`` below: the module is
  ``inferwatch.notify.channels.<kind>`` and its factory ``<kind>_factory``, imported when a
  receiver first uses the kind (a daemon loads only the channels its config names);
- the test is ``tests/notify/test_channel_<kind>.py``: the channel against a local emulator of
  the provider (``tests/notify/emulator.py``) answering with the documented bodies.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from inferwatch.notify.channels.base import REGISTRY, Notifier, NotifierFactory, build, register

KINDS = (
    *("webhook", "wecom", "dingtalk", "feishu", "serverchan", "pushplus", "bark", "ntfy"),
    *("telegram", "slack", "discord", "gotify", "pushover", "alertmanager", "console"),
)


def _deferred(kind: str) -> NotifierFactory:
    """``kind``'s factory, its module imported on first use."""

    def factory(config: Mapping[str, Any]) -> Notifier:
        module = importlib.import_module(f"{__name__}.{kind}")
        made: NotifierFactory = getattr(module, f"{kind}_factory")
        return made(config)

    factory.__qualname__ = f"{kind}_factory"
    return factory


for _kind in KINDS:
    register(_kind, _deferred(_kind))

__all__ = ["KINDS", "REGISTRY", "Notifier", "build", "register"]
