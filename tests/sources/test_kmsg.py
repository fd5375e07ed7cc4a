"""The /dev/kmsg source: one record per read, resume by (boot_id, next_seq), exact gap counts.

Unit tests feed records through a SOCK_SEQPACKET socket pair, which like /dev/kmsg returns one
record per read; the end-to-end test writes into the real kernel ring (root only).
"""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from pathlib import Path

import pytest

from conftest import IN_CI
from inferwatch.clock import FakeClock, SystemClock
from inferwatch.errors import NoData
from inferwatch.model import Gap, LineRecord, Record
from inferwatch.sources.kmsg import KmsgSource, read_boot_id, record_seq


def seqpacket(records: list[bytes]) -> tuple[socket.socket, int]:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    for r in records:
        a.send(r)
    b.setblocking(False)
    return a, os.dup(b.fileno())


def rec(seq: int, text: str = "hello") -> bytes:
    return f"6,{seq},{seq * 1000},-;{text}\n".encode()


async def collect(source: KmsgSource, want: int) -> list[Record]:
    got: list[Record] = []
    done = asyncio.Event()

    async def emit(r: Record) -> None:
        got.append(r)
        if r.ack is not None:
            r.ack()
        if len(got) >= want:
            done.set()

    task = asyncio.create_task(source.run(emit))
    await asyncio.wait_for(done.wait(), 10)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return got


def test_record_seq() -> None:
    assert record_seq(b"12,36072,1809884084,-;NVRM: Xid") == 36072
    assert record_seq(b"garbage") is None


def test_reads_records_and_checkpoints_next_seq() -> None:
    keep, fd = seqpacket([rec(10), rec(11), rec(12)])
    src = KmsgSource(Path("/dev/kmsg"), FakeClock(), boot_id="b1", opener=lambda: fd)
    got = asyncio.run(collect(src, 3))
    assert [r.line_no for r in got if isinstance(r, LineRecord)] == [10, 11, 12]
    assert src.checkpoint() == {"boot_id": "b1", "next_seq": 13}
    keep.close()


def test_resume_skips_applied_records_and_reports_records_lost_while_down() -> None:
    # Ring now holds 20..24; we had applied up to 17, so 18 and 19 were overwritten while down.
    keep, fd = seqpacket([rec(s) for s in range(15, 25)])
    checkpoint = {"boot_id": "b1", "next_seq": 18}
    src = KmsgSource(
        Path("/dev/kmsg"), FakeClock(), boot_id="b1", checkpoint=checkpoint, opener=lambda: fd
    )
    got = asyncio.run(collect(src, 7))
    lines = [r.line_no for r in got if isinstance(r, LineRecord)]
    assert lines == [18, 19, 20, 21, 22, 23, 24]
    assert not [r for r in got if isinstance(r, Gap)]
    keep.close()

    keep, fd = seqpacket([rec(s) for s in range(20, 23)])
    src = KmsgSource(
        Path("/dev/kmsg"), FakeClock(), boot_id="b1", checkpoint=checkpoint, opener=lambda: fd
    )
    got = asyncio.run(collect(src, 4))
    gaps = [r for r in got if isinstance(r, Gap)]
    assert len(gaps) == 1 and gaps[0].missed == 2
    assert [r.line_no for r in got if isinstance(r, LineRecord)] == [20, 21, 22]
    keep.close()


def test_new_boot_ignores_old_checkpoint() -> None:
    keep, fd = seqpacket([rec(1), rec(2)])
    src = KmsgSource(
        Path("/dev/kmsg"),
        FakeClock(),
        boot_id="b2",
        checkpoint={"boot_id": "b1", "next_seq": 500},
        opener=lambda: fd,
    )
    got = asyncio.run(collect(src, 2))
    assert [r.line_no for r in got if isinstance(r, LineRecord)] == [1, 2]
    keep.close()


def test_gap_while_following() -> None:
    keep, fd = seqpacket([rec(1), rec(2), rec(7)])
    src = KmsgSource(Path("/dev/kmsg"), FakeClock(), boot_id="b", opener=lambda: fd)
    got = asyncio.run(collect(src, 4))
    assert [type(r).__name__ for r in got] == ["LineRecord", "LineRecord", "Gap", "LineRecord"]
    gap = got[2]
    assert isinstance(gap, Gap) and gap.missed == 4
    keep.close()


def test_unreadable_device_is_no_data(tmp_path: Path) -> None:
    src = KmsgSource(tmp_path / "no-such-kmsg", FakeClock(), boot_id="b")

    async def emit(_r: Record) -> None:
        return None

    with pytest.raises(NoData):
        asyncio.run(src.run(emit))


def kmsg_writable() -> bool:
    return os.geteuid() == 0 and os.access("/dev/kmsg", os.W_OK)


@pytest.mark.kmsg
def test_real_kmsg_records_arrive_once_in_order() -> None:
    if not kmsg_writable():
        if IN_CI:
            pytest.fail("/dev/kmsg is not writable as root here")
        pytest.skip("needs root and a writable /dev/kmsg")
    marker = uuid.uuid4().hex
    clock = SystemClock()
    boot_id = read_boot_id(Path("/proc"))
    src = KmsgSource(Path("/dev/kmsg"), clock, boot_id=boot_id)
    mine: list[LineRecord] = []

    async def scenario() -> None:
        done = asyncio.Event()

        async def emit(r: Record) -> None:
            if isinstance(r, LineRecord) and marker in r.text:
                mine.append(r)
                if len(mine) == 3:
                    done.set()
            if r.ack is not None:
                r.ack()

        task = asyncio.create_task(src.run(emit))
        await asyncio.sleep(0)
        for i in range(3):
            fd = os.open("/dev/kmsg", os.O_WRONLY)  # a new descriptor per record: rate limit
            try:
                os.write(fd, f"<4>NVRM: test {marker} #{i}\n".encode())
            finally:
                os.close(fd)
        await asyncio.wait_for(done.wait(), 30)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(scenario())
    assert [r.text.split("#")[-1].strip() for r in mine] == ["0", "1", "2"]
    seqs = [r.line_no for r in mine]
    assert seqs == sorted(seqs) and len(set(seqs)) == 3
    checkpoint = src.checkpoint()
    assert checkpoint is not None and checkpoint["next_seq"] > seqs[-1]
    assert mine[0].text.startswith("12,")  # written by a user: facility 1, level 4
