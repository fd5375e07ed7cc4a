"""The journald source, driven by a fake ``journalctl`` executable.

The fake is a small Python script written into tmp_path for each test. It prints the entries of
a copy of tests/fixtures/journald/kernel.jsonl the way ``journalctl -o json`` does, honours
``--after-cursor``, ``--since=@S``, ``-n`` and ``FIELD=value`` matches, follows the file for
appended lines with ``-f``, and logs each invocation (pid and arguments). Control lines in the
fixture copy: ``#EXIT`` ends the process once it has printed something, ``#FAIL rc text`` prints
``text`` on stderr and exits with ``rc``. Tests wait on conditions with timeouts, never sleep.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, wait_until
from inferwatch.clock import FakeClock
from inferwatch.derive.kernel.effects import kernel_input
from inferwatch.derive.kernel.pipeline import KernelPipeline
from inferwatch.errors import NoData
from inferwatch.event import Event
from inferwatch.model import Gap, JournalRecord, Record
from inferwatch.sources.journald import (
    JournalctlFailed,
    JournaldSource,
    cursor_realtime,
    decode_entry,
    field_text,
)
from sources.run_source import collect

FIXTURE = REPO / "tests/fixtures/journald/kernel.jsonl"

FAKE = r'''#!{python}
"""Fake journalctl: prints a fixture as `journalctl -o json` would."""
import json, os, sys, time

FIXTURE, LOG = {fixture!r}, {log!r}
args = sys.argv[1:]
with open(LOG, "a") as log:
    log.write(json.dumps({{"pid": os.getpid(), "args": args}}) + "\n")
opt = lambda name: next((a.split("=", 1)[1] for a in args if a.startswith(name + "=")), None)
after, since = opt("--after-cursor"), opt("--since")
lines = args[args.index("-n") + 1] if "-n" in args else None
matches = [a.split("=", 1) for a in args if not a.startswith("-") and "=" in a]


def entries(text):
    return [json.loads(l) for l in text.splitlines() if l.strip() and not l.startswith("#")]


def wanted(entry):
    return all(entry.get(k) == v for k, v in matches)


with open(FIXTURE) as f:
    start = f.read()
if after is not None and after not in [e["__CURSOR"] for e in entries(start)]:
    sys.stderr.write("Failed to seek to cursor: Invalid argument\n")
    sys.exit(1)
skip = 0
if after is None and since is None and lines not in (None, "all"):
    skip = max(0, len([e for e in entries(start) if wanted(e)]) - int(lines))
printing, printed = after is None, 0
with open(FIXTURE) as f:
    while True:
        line = f.readline()
        if not line:
            if "-f" not in args:
                break
            time.sleep(0.02)
            continue
        if line.startswith("#EXIT") and printed:
            sys.exit(0)
        if line.startswith("#FAIL"):
            _, code, text = line.split(" ", 2)
            sys.stderr.write(text)
            sys.exit(int(code))
        if line.startswith("#") or not line.strip():
            continue
        entry = json.loads(line)
        if not printing:
            printing = entry["__CURSOR"] == after
            continue
        if since and int(entry["__REALTIME_TIMESTAMP"]) < int(since[1:]) * 1000000:
            continue
        if not wanted(entry):
            continue
        if skip:
            skip -= 1
            continue
        sys.stdout.write(line)
        sys.stdout.flush()
        printed += 1
'''


class Fake:
    """A fake journalctl over a private copy of the fixture."""

    def __init__(self, tmp_path: Path, fixture_text: str | None = None) -> None:
        self.fixture = tmp_path / "journal.jsonl"
        self.fixture.write_text(fixture_text if fixture_text is not None else FIXTURE.read_text())
        self.log = tmp_path / "invocations.jsonl"
        self.path = tmp_path / "journalctl"
        self.path.write_text(
            FAKE.format(python=sys.executable, fixture=str(self.fixture), log=str(self.log))
        )
        self.path.chmod(0o755)
        self.journal_dir = tmp_path / "run-journal"
        self.journal_dir.mkdir()

    def source(self, checkpoint: Any = None) -> JournaldSource:
        return JournaldSource(
            FakeClock(),
            journalctl=str(self.path),
            journal_dir=self.journal_dir,
            checkpoint=checkpoint,
            restart_delay=0.01,
        )

    def invocations(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


def fixture_entries() -> list[dict[str, object]]:
    lines = FIXTURE.read_text().splitlines()
    return [json.loads(line) for line in lines if line and not line.startswith("#")]


def kernel_cursors() -> list[str]:
    return [str(e["__CURSOR"]) for e in fixture_entries() if e["_TRANSPORT"] == "kernel"]


def records(got: list[Record]) -> list[JournalRecord]:
    return [r for r in got if isinstance(r, JournalRecord)]


def count(n: int) -> Callable[[list[Record]], bool]:
    return lambda got: len(records(got)) >= n


# --- decoding -------------------------------------------------------------------------------


def test_field_text_handles_every_shape_journald_prints() -> None:
    assert field_text("NVRM: Xid") == "NVRM: Xid"
    assert field_text(None) is None
    assert field_text([72, 105]) == "Hi"
    assert field_text([72, 0xFF]) == "H\ufffd"  # invalid UTF-8: replaced, never an error
    assert field_text(["a", None, [98]]) == "a\nb"  # a field present twice (or three times)
    assert field_text([]) == ""


def test_decode_entry() -> None:
    entry = decode_entry(
        '{"__CURSOR": "s=1;i=2;t=5f", "MESSAGE": [78, 86], "PRIORITY": "4",'
        ' "__REALTIME_TIMESTAMP": "95", "_BOOT_ID": ["b1", "b2"], "_TRANSPORT": "kernel"}'
    )
    assert entry is not None
    assert (entry.cursor, entry.message, entry.priority) == ("s=1;i=2;t=5f", "NV", 4)
    assert (entry.realtime_usec, entry.boot_id, entry.transport) == (95, "b1", "kernel")
    assert decode_entry("not json") is None
    assert decode_entry("[1, 2]") is None
    assert decode_entry(b'{"MESSAGE": null}') is not None


def test_cursor_realtime_reads_the_t_field() -> None:
    cursor = kernel_cursors()[0]
    assert cursor_realtime(cursor) == int(str(fixture_entries()[0]["__REALTIME_TIMESTAMP"]))
    assert cursor_realtime("s=1;i=2") is None
    assert cursor_realtime("t=zz") is None


def test_wall_time_removes_journald_receive_delay() -> None:
    rec = JournalRecord(
        source="kernel", path="journald", line_no=1, text="x", read_at=5.0, cursor="c",
        realtime_usec=100_000_000, monotonic_usec=50_000_000, source_monotonic_usec=20_000_000,
    )  # fmt: skip
    assert rec.wall_time == 70.0  # journald read it 30 s after the kernel logged it
    assert JournalRecord("k", "journald", 1, "x", 5.0).wall_time == 5.0
    assert (rec.level, rec.facility_name, rec.key) == (None, None, "journal:c")


# --- the source -----------------------------------------------------------------------------


def test_reads_kernel_entries_of_every_message_shape(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    got = records(asyncio.run(collect(fake.source(), count(10))))
    assert [r.cursor for r in got] == kernel_cursors()
    texts = [r.text for r in got]
    assert texts[0].startswith("NVRM: loading NVIDIA")
    assert texts[5].count("\n") == 2 and "fallen off the bus" in texts[5]  # one multi-line record
    assert texts[6].startswith("NVRM: Xid (PCI:0000:10:1c): 63,") and texts[6].endswith("\ufffd")
    assert texts[7] == ""  # MESSAGE null
    assert texts[8].startswith("NVRM: Xid (PCI:0000:01:00): 154,") and "\n" in texts[8]
    assert got[0].priority == 6 and got[0].level == "info" and got[0].facility_name == "kern"
    assert got[0].boot_id == "5d1b0c8e3f2a4b6c9d7e8f0a1b2c3d4e"
    args = fake.invocations()[0]["args"]
    assert args == ["-f", "-o", "json", "--all", "-n", "all", "_TRANSPORT=kernel"]
    assert "-k" not in args


def test_checkpoint_is_the_cursor_of_the_last_acknowledged_entry(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    source = fake.source()
    assert source.checkpoint() is None
    got = records(asyncio.run(collect(source, count(4), ack=False)))
    for index in (0, 2, 1):  # a late ack never moves the checkpoint back
        ack = got[index].ack
        assert ack is not None
        ack()
    assert source.checkpoint() == {"cursor": kernel_cursors()[2]}

    resumed = fake.source(checkpoint=source.checkpoint())
    more = records(asyncio.run(collect(resumed, count(2))))
    assert more[0].cursor == kernel_cursors()[3]
    assert f"--after-cursor={kernel_cursors()[2]}" in fake.invocations()[-1]["args"]


def test_restarts_journalctl_after_it_exits_without_losing_or_repeating(tmp_path: Path) -> None:
    lines = FIXTURE.read_text().splitlines()
    exit_after = lines.index(next(line for line in lines if '"_TRANSPORT": "stdout"' in line)) + 2
    text = "\n".join([*lines[:exit_after], "#EXIT", *lines[exit_after:]]) + "\n"
    fake = Fake(tmp_path, text)
    source = fake.source()
    got = records(asyncio.run(collect(source, count(10))))
    assert [r.cursor for r in got] == kernel_cursors()
    runs = fake.invocations()
    assert len(runs) == 2 and source.restarts == 1
    assert f"--after-cursor={kernel_cursors()[1]}" in runs[1]["args"]


def test_follows_entries_appended_later(tmp_path: Path) -> None:
    lines = FIXTURE.read_text().splitlines()
    fake = Fake(tmp_path, "\n".join(lines[:-1]) + "\n")

    def append_last(got: list[Record]) -> bool:
        if len(records(got)) == 9:
            with fake.fixture.open("a") as f:
                f.write(lines[-1] + "\n")
        return len(records(got)) >= 10

    got = records(asyncio.run(collect(fake.source(), append_last)))
    assert "Killed process" in got[-1].text


def test_cancel_kills_journalctl(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    asyncio.run(collect(fake.source(), count(1)))
    pid = int(str(fake.invocations()[0]["pid"]))

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    wait_until(gone, timeout=10, what="the fake journalctl to be killed")


def test_rejected_cursor_falls_back_to_its_time_and_reports_a_gap(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    entries = [e for e in fixture_entries() if e["_TRANSPORT"] == "kernel"]
    realtime = int(str(entries[3]["__REALTIME_TIMESTAMP"]))  # the 4th kernel entry's time
    vacuumed = f"s=0;i=1;b=0;m=0;t={realtime:x};x=0"
    source = fake.source(checkpoint={"cursor": vacuumed})
    got = asyncio.run(collect(source, count(6)))
    assert isinstance(got[0], Gap) and "cursor rejected" in got[0].reason
    assert [r.cursor for r in records(got)] == kernel_cursors()[4:]
    assert any(str(a).startswith("--since=@") for a in fake.invocations()[1]["args"])


def test_journalctl_failing_at_start_is_an_error(tmp_path: Path) -> None:
    fake = Fake(tmp_path, "#FAIL 1 Failed to get journal access: Permission denied\n")
    with pytest.raises(JournalctlFailed, match="Permission denied"):
        asyncio.run(collect(fake.source(), count(1)))


def test_no_journal_is_no_data(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    shutil.rmtree(fake.journal_dir)
    with pytest.raises(NoData, match="journald is not running"):
        asyncio.run(collect(fake.source(), count(1)))
    fake.journal_dir.mkdir()
    missing = JournaldSource(
        FakeClock(), journalctl=str(tmp_path / "nope"), journal_dir=fake.journal_dir
    )
    with pytest.raises(NoData, match="journalctl not found"):
        asyncio.run(collect(missing, count(1)))


def test_fixture_through_the_kernel_pipeline(tmp_path: Path) -> None:
    """What the daemon will do with these records: one incident for the host-A fault pair."""
    fake = Fake(tmp_path)
    got = records(asyncio.run(collect(fake.source(), count(10))))
    pipeline = KernelPipeline()
    events: list[Event] = []
    for rec in got:
        item = kernel_input(rec.source, rec.line_no, rec.wall_time, rec.text, rec.key)
        events += [e for e in pipeline.process(item) if isinstance(e, Event)]
    kinds = [e.type for e in events]
    incidents = [e for e in events if e.type == "fault_incident"]
    assert [i.details["classification"] for i in incidents] == [
        "software-oob-all-ranks",  # the constructed host-A pair
        "hardware-bus",  # 0000:91:00: explicit + implied Xid 79, counted once
        "hardware-bus",  # 0000:b3:00: the three-line fall-off record
        "hardware-memory",  # Xid 63 from the byte-array MESSAGE
    ]
    assert incidents[0].details["driver_version"] == "535.183.01"
    assert kinds.count("xid") == 6 and kinds.count("oom_kill") == 1


def test_engine_unit_command_filters_by_unit_not_kernel_transport() -> None:
    src = JournaldSource(
        FakeClock(), name="engine:flash:journal", matches=("-u", "flashnext.service"),
        start=("-n", "1000"), checkpoint={"cursor": "s=abc;i=1"},
    )  # fmt: skip
    cmd = src.command()
    assert cmd[-2:] == ["-u", "flashnext.service"]
    assert "_TRANSPORT=kernel" not in cmd
    assert "--after-cursor=s=abc;i=1" in cmd
