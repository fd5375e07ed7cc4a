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
- the registry line is ``register("<kind>", <kind>_factory)`` below (and its import);
- the test is ``tests/notify/test_channel_<kind>.py``: the channel against a local emulator of
  the provider (``tests/notify/emulator.py``) answering with the documented bodies.
"""

from __future__ import annotations

from inferwatch.notify.channels.alertmanager import alertmanager_factory
from inferwatch.notify.channels.bark import bark_factory
from inferwatch.notify.channels.base import REGISTRY, Notifier, build, register
from inferwatch.notify.channels.console import console_factory
from inferwatch.notify.channels.dingtalk import dingtalk_factory
from inferwatch.notify.channels.discord import discord_factory
from inferwatch.notify.channels.feishu import feishu_factory
from inferwatch.notify.channels.gotify import gotify_factory
from inferwatch.notify.channels.ntfy import ntfy_factory
from inferwatch.notify.channels.pushover import pushover_factory
from inferwatch.notify.channels.pushplus import pushplus_factory
from inferwatch.notify.channels.serverchan import serverchan_factory
from inferwatch.notify.channels.slack import slack_factory
from inferwatch.notify.channels.telegram import telegram_factory
from inferwatch.notify.channels.webhook import webhook_factory
from inferwatch.notify.channels.wecom import wecom_factory

register("webhook", webhook_factory)
register("wecom", wecom_factory)
register("dingtalk", dingtalk_factory)
register("feishu", feishu_factory)
register("serverchan", serverchan_factory)
register("pushplus", pushplus_factory)
register("bark", bark_factory)
register("ntfy", ntfy_factory)
register("telegram", telegram_factory)
register("slack", slack_factory)
register("discord", discord_factory)
register("gotify", gotify_factory)
register("pushover", pushover_factory)
register("alertmanager", alertmanager_factory)
register("console", console_factory)

__all__ = ["REGISTRY", "Notifier", "build", "register"]
