"""``inferwatch replay --kernel``: the acceptance cases of the kernel issue, through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferwatch.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "replay"


def replay(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, object]]:
    assert main(["replay", "--format", "jsonl", *args]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def incidents(docs: list[dict[str, object]]) -> list[dict[str, object]]:
    return [d for d in docs if d["kind"] == "event" and d["type"] == "fault_incident"]


def test_same_signature_pair_is_one_software_incident(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(FIXTURES / "xid31-pair.log")
    docs = replay(capsys, "--kernel", path)
    (incident,) = incidents(docs)
    assert incident["classification"] == "software-oob-all-ranks"
    assert incident["gpus"] == ["0000:03:00.0", "0000:04:00.0"]
    assert incident["source"] == path and incident["line"] == 5
    assert incident["at"] == "PT5400.120000S"  # kernel seconds only: boot-relative, not 1970
    xids = [d for d in docs if d.get("type") == "xid"]
    assert [x["xid"] for x in xids] == [31, 31]
    assert xids[0]["mmu"] == {
        "engine": "GRAPHICS",
        "gpc": 4,
        "client": "GPCCLIENT_T1_0",
        "addr_hi": 0x7F3A,
        "addr_lo": 0x1B200000,
        "fault_type": "FAULT_PDE",
        "access_type": "ACCESS_TYPE_VIRT_READ",
    }
    summary = docs[-1]
    assert summary["kind"] == "summary"
    assert summary["events"] == {"xid": 2, "fault_incident": 1}


def test_different_gpcs_make_no_incident(capsys: pytest.CaptureFixture[str]) -> None:
    docs = replay(capsys, "--kernel", str(FIXTURES / "xid31-different-gpc.log"))
    assert incidents(docs) == []
    assert len([d for d in docs if d.get("type") == "xid"]) == 2


def test_single_xid_140_is_a_hardware_incident(capsys: pytest.CaptureFixture[str]) -> None:
    docs = replay(capsys, "--kernel", str(FIXTURES / "xid140-single.log"), "--tz", "Europe/Berlin")
    (incident,) = incidents(docs)
    assert incident["classification"] == "hardware-memory"
    assert incident["gpus"] == ["0000:04:00.0"]
    assert incident["at"] == "2025-02-23T16:30:02+01:00"  # dmesg -T is local time: --tz applies


def test_files_are_merged_by_time(capsys: pytest.CaptureFixture[str]) -> None:
    """A boot-relative file joins wall-clock files only when --boot-time places it."""
    docs = replay(
        capsys,
        "--kernel",
        str(FIXTURES / "xid140-single.log"),
        str(FIXTURES / "xid31-pair.log"),
        "--boot-time",
        "2025-02-23T15:00:00+00:00",
    )
    times = [d["at"] for d in docs if d["kind"] == "event" and d["type"] == "xid"]
    assert times == sorted(times) and len(times) == 3
    assert times[0] == "2025-02-23T16:30:00.120000+00:00"  # 5400.12 s after boot
    assert docs[-1]["time_base"] == "wall"
    assert docs[-1]["boot_time"] == "2025-02-23T15:00:00+00:00"


def test_boot_relative_and_wall_files_are_not_merged_blindly(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["--kernel", str(FIXTURES / "xid140-single.log"), str(FIXTURES / "xid31-pair.log")]
    assert main(["replay", *args]) == 2
    assert "--boot-time" in capsys.readouterr().err
    assert main(["replay", *args, "--boot-time", "yesterday"]) == 2
    assert main(["replay", *args, "--boot-time", "1740322800"]) == 0


def test_text_format_and_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "--kernel", str(FIXTURES / "xid31-pair.log")]) == 0
    out = capsys.readouterr().out
    assert "software-oob-all-ranks" in out and "replayed 2 records" in out
    assert main(["replay", "--kernel", "/nonexistent/kern.log"]) == 2
    assert main(["replay"]) == 2
    assert main(["replay", "--kernel", str(FIXTURES / "xid31-pair.log"), "--tz", "Mars/Base"]) == 2
