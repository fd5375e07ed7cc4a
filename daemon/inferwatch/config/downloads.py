"""The ``downloads:`` section: model downloads to watch until they finish, fail or stall."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from inferwatch.config.types import Duration

_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
DOWNLOADER_KEYS = ("unit", "user_unit", "pid", "process_pattern")


class DownloadConfig(BaseModel):
    """One download: where it writes, and exactly one way to know whether its downloader lives."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    directory: Path
    unit: str | None = None  # a system unit (``systemctl show``)
    user_unit: str | None = None  # a unit of the user's manager (``systemctl --user show``)
    pid: int | None = Field(default=None, ge=1)
    process_pattern: str | None = None  # a regular expression searched in command lines
    expected_bytes: int | None = Field(default=None, gt=0)
    index_file: str | None = None  # e.g. model.safetensors.index.json, inside ``directory``
    expected_files: int | None = Field(default=None, ge=1)
    log: Path | None = None  # the downloader's output: its last error lines explain a failure
    interval: Duration = Field(default=2.0, gt=0)
    stall_after: Duration = Field(default=600.0, gt=0)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError("use letters, digits, '.', '_' and '-' only")
        return v

    @field_validator("process_pattern")
    @classmethod
    def _pattern(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as exc:
                raise ValueError(f"invalid regular expression: {exc}") from None
        return v

    @model_validator(mode="after")
    def _one_downloader(self) -> DownloadConfig:
        chosen = [k for k in DOWNLOADER_KEYS if getattr(self, k) is not None]
        if len(chosen) != 1:
            raise ValueError(
                "name the downloader by exactly one of unit, user_unit, pid, process_pattern"
                + (f" (got {', '.join(chosen)})" if chosen else "")
            )
        return self

    def downloader(self) -> tuple[str, str]:
        """``("pid", "1234")``, ``("unit", "x.service")``, …: what identifies the downloader."""
        for key in DOWNLOADER_KEYS:
            value = getattr(self, key)
            if value is not None:
                return key, str(value)
        raise AssertionError("validated: exactly one downloader key")


def _unique(downloads: list[DownloadConfig]) -> list[DownloadConfig]:
    seen: set[str] = set()
    for d in downloads:
        if d.name in seen:
            raise ValueError(f"download name {d.name!r} is used twice")
        seen.add(d.name)
    return downloads


Downloads = Annotated[list[DownloadConfig], AfterValidator(_unique)]
