"""The config file as the daemon and the CLI read it: the models' validation plus the checks of
each part that owns a section (today notify's). Everything that loads a config for use goes
through here, so ``inferwatch check`` and the daemon judge a file alike.
"""

from __future__ import annotations

from pathlib import Path

from inferwatch.config import loader
from inferwatch.config.models import Config
from inferwatch.errors import ConfigError, Problem
from inferwatch.notify.validate import validate

CHECKS: tuple[loader.Check, ...] = (validate,)


def load_config(path: Path | str | None) -> Config:
    """The config from ``path`` (every problem at its place), or the embedded defaults."""
    return loader.load_config(path, CHECKS)


def parse_config(text: str, name: str) -> Config:
    return loader.parse_config(text, name, CHECKS)


def load_with_web(path: Path | str | None, web_file: Path | str | None) -> Config:
    """The config, its ``web:`` section taken from ``web_file`` (``--web.config.file``) when one
    is given; a config with a ``web:`` section of its own as well is refused (one place)."""
    config = load_config(path)
    if web_file is None:
        return config
    web = loader.load_web_config(web_file)
    if config.web is not None:
        raise ConfigError(
            [
                Problem(
                    str(web_file),
                    1,
                    1,
                    "",
                    f"{path} has a web: section too: set TLS and basic auth in one place",
                )
            ]
        )
    return config.model_copy(update={"web": web})
