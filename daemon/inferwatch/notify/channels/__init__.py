"""Notification channels, one module per service, registered by config kind."""

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
register("alertmanager", alertmanager_factory)
register("console", console_factory)
register("wecom", wecom_factory)
register("telegram", telegram_factory)
register("ntfy", ntfy_factory)
register("bark", bark_factory)
register("dingtalk", dingtalk_factory)
register("feishu", feishu_factory)
register("serverchan", serverchan_factory)
register("pushplus", pushplus_factory)
register("gotify", gotify_factory)
register("discord", discord_factory)
register("slack", slack_factory)
register("pushover", pushover_factory)

__all__ = ["REGISTRY", "Notifier", "build", "register"]
