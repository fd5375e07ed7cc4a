#!/usr/bin/env python3
"""Append lines of SRC to DST at RATE lines/s for SECONDS, as an engine writes its log.

    python3 bench/log_writer.py SRC DST RATE SECONDS

Lines go out in 10-ms slices, each flushed (a line-buffered engine's pattern); prints the number
of lines written. SRC is read ahead into memory so disk reads do not pace the writer.
"""

from __future__ import annotations

import sys
import time
from itertools import cycle, islice
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 5:
        print(__doc__)
        return 2
    src, dst, rate, seconds = Path(argv[1]), Path(argv[2]), float(argv[3]), float(argv[4])
    total = int(rate * seconds)
    with src.open(encoding="utf-8") as f:
        lines = list(islice(f, total))
    source = cycle(lines)
    written = 0
    start = time.monotonic()
    with dst.open("a", encoding="utf-8") as out:
        while written < total:
            due = min(total, int((time.monotonic() - start) * rate) + 1)
            if due > written:
                out.writelines(islice(source, due - written))
                out.flush()
                written = due
            time.sleep(0.01)
    print(written)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
