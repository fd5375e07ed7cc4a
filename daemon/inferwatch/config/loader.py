"""Load and validate the configuration file, reporting every problem at its line and column.

The models check types and shapes; ``checks`` add what only the parts that use a section can
judge (``notify.validate``: routes, receivers, digests). ``inferwatch.configfile`` passes every
such check; code here imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from inferwatch.config.crossref import reference_problems
from inferwatch.config.models import REFERENCES_CHECKED, Config
from inferwatch.config.suggest import did_you_mean, known_keys
from inferwatch.config.web import BASE_DIR, WebConfig
from inferwatch.config.yamlguard import MAX_BYTES
from inferwatch.config.yamlpos import Located, format_loc, load_located, too_large
from inferwatch.errors import ConfigError, Problem

Check = Callable[[Config, Located, str], list[Problem]]


def load_config(path: Path | str | None, checks: Sequence[Check] = ()) -> Config:
    """The config from ``path``, or the embedded defaults when ``path`` is None."""
    if path is None:
        return Config()
    return parse_config(read_text(path), str(path), checks)


def load_web_config(path: Path | str) -> WebConfig:
    """A ``--web.config.file`` (exporter-toolkit's format: the ``web:`` section's keys at the
    top level), every problem at its place; an empty file means no TLS and no auth."""
    name = str(path)
    located = _located(read_text(path), name)
    try:
        return WebConfig.model_validate(located.data or {}, context=_context(name))
    except ValidationError as exc:
        raise ConfigError(_problems(exc, located, name)) from None


def read_text(path: Path | str) -> str:
    """A config file's text: at most :data:`MAX_BYTES`, UTF-8, or a ConfigError."""
    name = str(path)
    try:
        with Path(path).open("rb") as f:
            raw = f.read(MAX_BYTES + 1)  # never more: a huge file is refused, not read
        if len(raw) > MAX_BYTES:
            raise ConfigError([too_large(name, _size(path, len(raw)))])
        text = raw.decode("utf-8")
    except OSError as exc:
        raise ConfigError([Problem(name, 1, 1, "", f"cannot read: {exc.strerror}")]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError([Problem(name, 1, 1, "", f"not UTF-8 text: {exc.reason}")]) from None
    return text


def _size(path: Path | str, at_least: int) -> int:
    """The file's size for the message (what was read, if it cannot be stat'ed)."""
    try:
        return max(Path(path).stat().st_size, at_least)
    except OSError:
        return at_least


def _located(text: str, name: str) -> Located:
    located = load_located(text, name)
    problems = list(located.problems)
    if located.data is not None and not isinstance(located.data, dict):
        problems.append(Problem(name, 1, 1, "", "the config file must be a mapping of keys"))
    if problems:
        raise ConfigError(problems)
    return located


def _context(name: str) -> dict[str, Any]:
    """Relative file names in a config are read from its own directory (``web:``'s files)."""
    return {BASE_DIR: Path(name).parent}


def parse_config(text: str, name: str, checks: Sequence[Check] = ()) -> Config:
    located = _located(text, name)
    problems: list[Problem] = []
    if isinstance(located.data, dict):  # with the fields' problems, in one pass
        problems = reference_problems(located.data, located, name)
    try:
        context = {**_context(name), REFERENCES_CHECKED: True}
        config = Config.model_validate(located.data, context=context)
    except ValidationError as exc:
        problems += _problems(exc, located, name)
    if problems:
        raise ConfigError(sorted(problems, key=lambda p: (p.line, p.col)))
    problems = [problem for check in checks for problem in check(config, located, name)]
    if problems:
        raise ConfigError(problems)
    return config


def _problems(exc: ValidationError, located: Located, name: str) -> list[Problem]:
    out: list[Problem] = []
    for err in exc.errors(include_url=False):
        loc = _clean_loc(err["loc"], located.data)
        line, col = located.position(loc)
        message = _message(err)
        if err.get("type") == "extra_forbidden" and loc and isinstance(loc[-1], str):
            message += did_you_mean(loc[-1], known_keys(Config, loc[:-1]))
        out.append(Problem(name, line, col, format_loc(loc), message))
    out.sort(key=lambda p: (p.line, p.col))
    return out


def _clean_loc(loc: tuple[Any, ...], data: Any) -> tuple[str | int, ...]:
    """Drop pydantic's internal steps (union branch tags, validator names) from a location."""
    out: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(part, int) and isinstance(node, list):
            out.append(part)
            node = node[part] if part < len(node) else None
        elif isinstance(part, str) and isinstance(node, dict) and part in node:
            out.append(part)
            node = node[part]
        elif isinstance(part, str) and isinstance(node, dict) and _alias(part) in node:
            out.append(_alias(part))
            node = node[_alias(part)]
        elif (
            isinstance(part, str)
            and isinstance(node, dict)
            and not part.startswith(("function-", "union"))
        ):
            out.append(_alias(part))  # a missing required field: name it, point at its parent
            node = None
    return tuple(out)


def _alias(part: str) -> str:
    return part[:-1] if part.endswith("_") else part


def _message(err: Any) -> str:
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required key is missing"
    msg = str(err.get("msg", "invalid value"))
    for prefix in ("Value error, ", "Assertion failed, "):
        msg = msg.removeprefix(prefix)
    return msg
