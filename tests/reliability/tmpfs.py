"""A small real tmpfs for state-dir fault tests: mounted (root only) and always unmounted."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import IN_CI


@contextlib.contextmanager
def tmpfs(where: Path, size: str = "2m") -> Iterator[Path]:
    """Mount a ``size`` tmpfs on ``where``; skip (fail under CI) where root cannot mount."""
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        message = f"cannot mount a tmpfs (needs root): {done.stderr.strip()}"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def remount(where: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(where)], check=True)


def fill(directory: Path, name: str = "filler") -> Path:
    """Write zeros into ``directory/name`` until the file system says it is full."""
    path = directory / name
    chunk = b"\0" * 65536
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        while True:
            try:
                os.write(fd, chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                if len(chunk) == 1:
                    break
                chunk = chunk[: len(chunk) // 2]
    finally:
        os.close(fd)
    return path
