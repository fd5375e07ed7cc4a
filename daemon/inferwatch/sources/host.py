"""The host's memory as the kernel reports it: ``<proc>/meminfo``, ``<proc>/pressure/{memory,io}``
read as text, and how much of a file sits in the page cache (``mincore(2)`` over a read-only
mapping, a window at a time: nothing is read from the file, no page is brought in)."""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path

PRESSURE_RESOURCES = ("memory", "io")
MAX_TEXT = 64 * 1024
WINDOW = 1 << 30  # map at most 1 GiB at a time (a 256 KiB residency vector)


@dataclass(frozen=True, slots=True)
class HostTexts:
    meminfo: str | None
    pressure: dict[str, str] = field(default_factory=dict)  # resource -> file text


def _read(path: Path) -> str | None:
    try:
        with path.open(encoding="ascii", errors="replace") as f:
            return f.read(MAX_TEXT)
    except OSError:
        return None


def read_host(proc: Path) -> HostTexts:
    pressure = {r: t for r in PRESSURE_RESOURCES if (t := _read(proc / "pressure" / r)) is not None}
    return HostTexts(_read(proc / "meminfo"), pressure)


_libc: ctypes.CDLL | None = None
_LOW_BIT = bytes(i & 1 for i in range(256))  # mincore sets bit 0 of a resident page's byte


def _c() -> ctypes.CDLL:
    global _libc  # noqa: PLW0603 - loaded once
    if _libc is None:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        lib.mmap.restype = ctypes.c_void_p
        lib.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                             ctypes.c_int, ctypes.c_long]  # fmt: skip
        lib.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
        _libc = lib
    return _libc


def resident_bytes(path: Path) -> int | None:
    """Bytes of ``path`` in the page cache now; None when it cannot be told (no file, no
    permission, not a regular file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        page = mmap.PAGESIZE
        libc = _c()
        resident = 0
        for offset in range(0, size, WINDOW):
            length = min(WINDOW, size - offset)
            addr = libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, offset)
            if addr in (None, ctypes.c_void_p(-1).value):
                return None
            try:
                vec = ctypes.create_string_buffer((length + page - 1) // page)
                if libc.mincore(addr, length, vec) != 0:
                    return None
                resident += vec.raw.translate(_LOW_BIT).count(1) * page
            finally:
                libc.munmap(addr, length)
        return min(resident, size)
    finally:
        os.close(fd)
