"""Files shipped with inferwatch: the rules in rules/ and the service files of deploy/ (both
installed as package data by setup.py; a source checkout reads them where they are)."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def shipped_rules_dir() -> Path:
    """``inferwatch/_data/rules`` in an installed package, ``rules/`` in a source checkout."""
    installed = _PACKAGE / "_data" / "rules"
    if installed.is_dir():
        return installed
    return _PACKAGE.parents[1] / "rules"


def shipped_deploy_file(relative: str) -> Path:
    """``inferwatch/_data/deploy/<relative>`` in an installed package, ``deploy/<relative>`` in a
    source checkout (``systemd/inferwatch.service``, ``config.example.yaml``)."""
    installed = _PACKAGE / "_data" / "deploy" / relative
    if installed.is_file():
        return installed
    return _PACKAGE.parents[1] / "deploy" / relative


def expand_builtin(pattern: str) -> str:
    """``builtin:rules/*.yaml`` → a glob under the shipped rules directory."""
    prefix = "builtin:rules/"
    if pattern.startswith(prefix):
        return str(shipped_rules_dir() / pattern[len(prefix) :])
    return pattern
