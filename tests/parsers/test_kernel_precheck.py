"""The chunk pre-check must accept every record the per-record pre-checks accept."""

from __future__ import annotations

import json
from pathlib import Path

from kernel_lines import might_be_kernel_record

from inferwatch.parsers.kernel_misc import might_be_misc
from inferwatch.parsers.kernel_precheck import INTERESTING_BYTES
from inferwatch.parsers.xid import might_be_gpu_record

FIXTURES = Path(__file__).parents[1] / "fixtures"


def lines() -> list[str]:
    out = [
        json.loads(raw)["line"]
        for raw in (FIXTURES / "corpus" / "xid-lines.jsonl").read_text().splitlines()
    ]
    for path in sorted((FIXTURES / "kernel").glob("*.txt")):
        out.extend(path.read_text(encoding="utf-8").splitlines())
    return out


def test_union_of_the_parsers_prechecks() -> None:
    checked = 0
    for line in lines():
        expected = might_be_gpu_record(line) or might_be_misc(line)
        assert might_be_kernel_record(line) == expected, line
        assert (INTERESTING_BYTES.search(line.encode()) is not None) == expected, line
        checked += expected
    assert checked > 40


def test_ordinary_lines_are_rejected() -> None:
    assert not might_be_kernel_record("[  12.3] usb 1-1: new high-speed USB device number 2")
