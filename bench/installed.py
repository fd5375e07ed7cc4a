#!/usr/bin/env python3
"""The inferwatch a host runs: the checkout installed by the distribution's own python3.

README's install on a Debian host (``python3 -m venv /opt/inferwatch`` and ``pip install``)
gets Debian's python3: ``/usr/bin/python3``, package python3.11-minimal, a statically linked
build that Debian optimizes with profile guidance and link-time optimization. A development
machine may put another interpreter first on PATH, and the checkout's ``.venv`` is made by that
one: here pyenv's 3.11.7, configured with ``--enable-shared`` and without
``--enable-optimizations``, which runs the replay's Python ~20 % slower (bench/RESULTS.md).

So ``make bench`` measures the install a host gets: this makes ``bench/out/venv-installed`` with
``BENCH_PYTHON`` (default ``/usr/bin/python3`` where that is a Python >= 3.11 with venv), installs
the checkout there (editable, so the code measured is always the checkout's, as in ``.venv``),
and ``run_all.py`` runs every figure with that venv's python. The venv is made again when its
base interpreter, ``pyproject.toml`` or ``setup.py`` changes. ``BENCH_PYTHON=checkout``, a base
that is missing or too old, or a failed install measure the checkout's ``.venv`` instead (said
on stderr).

    .venv/bin/python bench/installed.py   # the venv's python, made or updated first
    .venv/bin/python bench/installed.py --describe PYTHON   # Python 3.11.2 (/usr/bin/python3.11)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHECKOUT_PYTHON = REPO / ".venv" / "bin" / "python"
VENV = REPO / "bench" / "out" / "venv-installed"
DEFAULT_BASE = "/usr/bin/python3"
_USABLE = "import sys, venv, ensurepip; print(sys.version_info >= (3, 11))"


def describe(python: Path | str) -> str:
    """``Python 3.11.2 (/usr/bin/python3.11)``: the version and the real interpreter."""
    probe = (
        "import os, platform, sys; "
        "print(platform.python_version(), os.path.realpath(sys.executable))"
    )
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"{python} (does not run)"
    version, path = done.stdout.split(maxsplit=1)
    return f"Python {version} ({path.strip()})"


def installed_python() -> Path:
    """The python of the venv the figures run with (made or updated first)."""
    base = os.environ.get("BENCH_PYTHON", DEFAULT_BASE)
    if base == "checkout":
        return CHECKOUT_PYTHON
    if not _usable(base):
        _fallback(f"{base} is missing, older than 3.11 or has no venv/ensurepip")
        return CHECKOUT_PYTHON
    stamp = VENV / ".installed"
    wanted = f"{Path(base).resolve()}\n"
    sources = [REPO / "pyproject.toml", REPO / "setup.py"]
    fresh = stamp.is_file() and stamp.read_text() == wanted
    if fresh and all(s.stat().st_mtime <= stamp.stat().st_mtime for s in sources if s.exists()):
        return VENV / "bin" / "python"
    steps = [
        [base, "-m", "venv", "--clear", str(VENV)],
        [str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", "-e", str(REPO)],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            _fallback(f"`{' '.join(step)}` failed:\n{done.stderr.strip()}")
            return CHECKOUT_PYTHON
    stamp.write_text(wanted)
    return VENV / "bin" / "python"


def _usable(base: str) -> bool:
    try:
        done = subprocess.run([base, "-c", _USABLE], capture_output=True, text=True, check=False)
    except OSError:
        return False
    return done.returncode == 0 and done.stdout == "True\n"


def _fallback(why: str) -> None:
    print(f"bench: {why}; measuring the checkout's .venv instead", file=sys.stderr)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--describe"] and len(sys.argv) == 3:
        print(describe(sys.argv[2]))
    elif len(sys.argv) == 1:
        print(installed_python())
    else:
        sys.exit(__doc__.rsplit("\n\n", 1)[1])
