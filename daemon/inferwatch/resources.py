"""Files shipped with inferwatch: the rules in rules/ (installed as package data)."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def shipped_rules_dir() -> Path:
    """``inferwatch/_data/rules`` in an installed package, ``rules/`` in a source checkout."""
    installed = _PACKAGE / "_data" / "rules"
    if installed.is_dir():
        return installed
    return _PACKAGE.parents[1] / "rules"


def expand_builtin(pattern: str) -> str:
    """``builtin:rules/*.yaml`` → a glob under the shipped rules directory."""
    prefix = "builtin:rules/"
    if pattern.startswith(prefix):
        return str(shipped_rules_dir() / pattern[len(prefix) :])
    return pattern
