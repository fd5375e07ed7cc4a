"""A log writer in its own process, the way real programs write logs, for the tailer tests.

Usage: ``python tail_writer_proc.py MODE PATH COUNT``; writes ``W0000000 …`` lines, then
``W-END``. MODE is one of:

- ``append``: ``open(path, "ab")``, one write per line (O_APPEND);
- ``pwrite``: no O_APPEND, writes at its own offset (after copytruncate: a sparse NUL hole);
- ``watched``: ``logging.handlers.WatchedFileHandler`` (reopens after an external rename);
- ``rotating``: ``logging.handlers.RotatingFileHandler`` (rotates by rename itself).
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys
import time
from collections.abc import Callable

END = "W-END"


def lines(count: int) -> list[str]:
    return [f"W{seq:07d} " + "w" * (seq * 7 % 90) for seq in range(count)] + [END]


def main() -> int:
    mode, path, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    write = _writer(mode, path)
    for index, line in enumerate(lines(count)):
        write(line)
        if index % 25 == 24:
            time.sleep(0.004)  # a steady writer, so rotations land in the middle of it
    return 0


def _writer(mode: str, path: str) -> Callable[[str], object]:
    if mode == "append":
        handle = open(path, "ab", buffering=0)  # noqa: SIM115 - lives as long as the process
        return lambda line: handle.write(f"{line}\n".encode())
    if mode == "pwrite":
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        offset = [0]

        def pwrite(line: str) -> None:
            data = f"{line}\n".encode()
            os.pwrite(fd, data, offset[0])
            offset[0] += len(data)

        return pwrite
    if mode == "watched":
        handler: logging.Handler = logging.handlers.WatchedFileHandler(path)
    elif mode == "rotating":
        handler = logging.handlers.RotatingFileHandler(path, maxBytes=16 * 1024, backupCount=500)
    else:
        raise SystemExit(f"unknown mode {mode}")
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("writer")
    logger.propagate = False
    logger.addHandler(handler)
    return logger.warning


if __name__ == "__main__":
    sys.exit(main())
