"""Exceptions with a meaning the runtime acts on."""

from __future__ import annotations

from typing import NamedTuple


class InferwatchError(Exception):
    """Base of the errors inferwatch raises on purpose."""


class NoData(InferwatchError):
    """The input does not exist here (no GPU, no file, no permission to a device): not a failure.

    A source raising it is reported once and idles until it is retried.
    """


class Problem(NamedTuple):
    """One configuration or rule-file problem, located in its file."""

    path: str
    line: int
    col: int
    field: str
    message: str

    def __str__(self) -> str:
        where = self.field or "<root>"
        return f"{self.path}:{self.line}:{self.col}: {where}: {self.message}"


class ConfigError(InferwatchError):
    """A configuration file failed to load; carries every problem found, not only the first."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))
