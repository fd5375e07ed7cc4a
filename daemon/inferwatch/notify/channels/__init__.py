"""Notification channels, one module per service, registered by config kind."""

from __future__ import annotations

from inferwatch.notify.channels.alertmanager import alertmanager_factory
from inferwatch.notify.channels.base import REGISTRY, Notifier, build, register
from inferwatch.notify.channels.console import console_factory
from inferwatch.notify.channels.webhook import webhook_factory

register("webhook", webhook_factory)
register("alertmanager", alertmanager_factory)
register("console", console_factory)

__all__ = ["REGISTRY", "Notifier", "build", "register"]
