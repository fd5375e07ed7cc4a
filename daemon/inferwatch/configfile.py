"""The config file as the daemon and the CLI read it: the models' validation plus the checks of
each part that owns a section (today notify's). Everything that loads a config for use goes
through here, so ``inferwatch check`` and the daemon judge a file alike.
"""

from __future__ import annotations

from pathlib import Path

from inferwatch.config import loader
from inferwatch.config.models import Config
from inferwatch.notify.validate import validate

CHECKS: tuple[loader.Check, ...] = (validate,)


def load_config(path: Path | str | None) -> Config:
    """The config from ``path`` (every problem at its place), or the embedded defaults."""
    return loader.load_config(path, CHECKS)


def parse_config(text: str, name: str) -> Config:
    return loader.parse_config(text, name, CHECKS)
