"""Kernel-log prefixes, raw kmsg records, the assembler, and that no parser ever raises."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_lines import parse_gpu_line, parse_misc_line

from inferwatch.parsers import kernel_misc, xid, xid_catalog
from inferwatch.parsers.kernel import (
    PLACEHOLDER_YEAR,
    KernelLine,
    RawRecord,
    RecordAssembler,
    is_continuation,
    month_number,
    parse_kernel_line,
    parse_kmsg_record,
    unescape_kmsg,
)

FIXTURES = Path(__file__).parent.parent / "fixtures"
SIGNAL = FIXTURES / "signal"
CORPUS_LINES = [
    json.loads(raw)["line"]
    for raw in (FIXTURES / "corpus" / "xid-lines.jsonl").read_text().splitlines()
]
KERNEL_FIXTURE_LINES = [
    line
    for path in sorted((FIXTURES / "kernel").glob("*.txt"))
    for line in path.read_text().splitlines()
    if not line.startswith("#")
]


def corpus_line(fragment: str) -> KernelLine:
    (line,) = [text for text in CORPUS_LINES if fragment in text]
    return parse_kernel_line(line)


class TestPrefixVariants:
    """Every variant of reference/xid.md section 2, on the corpus lines that show it."""

    def test_bare(self) -> None:
        parsed = corpus_line("Row Remapper")
        assert parsed.message.startswith("NVRM: Xid (PCI:0000:10:1c): 63")
        assert (parsed.kernel_seconds, parsed.wall, parsed.host) == (None, None, None)

    def test_kernel_seconds_padded(self) -> None:
        parsed = corpus_line("[   49.261458]")
        assert parsed.kernel_seconds == pytest.approx(49.261458)
        assert parsed.message == "NVRM: GPU at 0000:01:00.0 has fallen off the bus."

    def test_caller_id_after_seconds(self) -> None:
        parsed = corpus_line("[ T1946]")
        assert parsed.kernel_seconds == pytest.approx(130.45625)
        assert parsed.caller == "T1946"
        assert parsed.message.startswith("NVRM: Xid (PCI:0000:2b:00): 31")

    def test_ctime_with_padded_day(self) -> None:
        parsed = corpus_line("[Fri Aug  9 13:32:56 2024]")
        assert parsed.wall == datetime(2024, 8, 9, 13, 32, 56)
        assert parsed.year_missing is False
        assert parsed.message.startswith("NVRM: Xid (PCI:0000:00:08): 94")

    def test_iso_with_comma_and_decode(self) -> None:
        parsed = corpus_line("kern  :warn  :")
        assert (parsed.facility, parsed.level) == ("kern", "warn")
        assert parsed.wall == datetime(2025, 1, 21, 4, 41, 44, 283575, tzinfo=UTC)
        assert parsed.message.startswith("NVRM: Xid (PCI:0000:38:00): 13")

    def test_syslog_with_host(self) -> None:
        parsed = corpus_line("hyperion")
        assert (parsed.host, parsed.tag, parsed.year_missing) == ("hyperion", "kernel", True)
        assert parsed.wall == datetime(PLACEHOLDER_YEAR, 5, 13, 17, 18, 47)
        assert parsed.wall_in_year(2024) == datetime(2024, 5, 13, 17, 18, 47)

    def test_syslog_without_host(self) -> None:
        parsed = corpus_line("Mar 29 15:38:59 kernel:")
        assert (parsed.host, parsed.tag) == (None, "kernel")
        assert parsed.message.startswith("NVRM: Xid (PCI:0000:01:00): 154")

    def test_syslog_german_month(self) -> None:
        parsed = corpus_line("Okt 06")
        assert parsed.wall == datetime(PLACEHOLDER_YEAR, 10, 6, 17, 59, 27)
        assert parsed.host == "balrog"

    def test_kernel_tag_only(self) -> None:
        parsed = corpus_line("kernel: NVRM: Xid (PCI:0000:dc:00)")
        assert (parsed.tag, parsed.host, parsed.wall) == ("kernel", None, None)
        assert parsed.message.startswith("NVRM: Xid")

    def test_wrapper(self) -> None:
        parsed = corpus_line("[gpu-health]")
        assert parsed.wrapper == "[gpu-health] [CRITICAL] GPU-1234: XID:"
        assert parsed.message.startswith("NVRM: Xid (PCI:0000:c6:00): 79")

    def test_documentation_ellipsis(self) -> None:
        parsed = corpus_line("[…] NVRM: Xid")
        assert parsed.message == "NVRM: Xid (0000:03:00): 14, Channel 00000001"

    def test_raw_kmsg_header_in_a_text_line(self) -> None:
        parsed = parse_kernel_line(
            "12,36072,1809884084,-;NVRM: Xid (PCI:0000:01:00): 31, pid=1234, name=python3, "
            "Ch 00000008"
        )
        assert (parsed.kernel_seconds, parsed.level, parsed.facility) == (1809.884084, "warn",
                                                                          "user")  # fmt: skip
        assert parsed.message.startswith("NVRM: Xid (PCI:0000:01:00): 31")

    def test_continuation_line(self) -> None:
        parsed = corpus_line("installed in this system has")
        assert parsed.continuation
        assert parsed.message == "NVRM: (PCI ID: 10de:26b5) installed in this system has"


class TestOtherPrefixes:
    """Shapes from the kernel fixtures and from the formats (constructed lines are marked)."""

    def test_syslog_then_kernel_seconds(self) -> None:
        (line,) = [text for text in KERNEL_FIXTURE_LINES if "ceph-testing-0001" in text]
        parsed = parse_kernel_line(line)
        assert parsed.host == "ceph-testing-0001"
        assert parsed.kernel_seconds == pytest.approx(369.894678)
        assert parsed.message.startswith("INFO: task kworker/u48:0:11")

    def test_localised_ctime(self) -> None:
        parsed = parse_kernel_line("[三 12月  3 14:24:02 2025] Out of memory: Killed process 1")
        assert parsed.wall == datetime(2025, 12, 3, 14, 24, 2)
        assert parsed.message.startswith("Out of memory")

    def test_decode_then_kernel_seconds(self) -> None:
        parsed = parse_kernel_line("kern :err : [20275.259811] pcieport 0000:00:1c.4: AER: x")
        assert parsed.kernel_seconds == pytest.approx(20275.259811)
        assert parsed.level == "err"
        assert parsed.message == "pcieport 0000:00:1c.4: AER: x"

    @pytest.mark.parametrize(
        ("month", "number"),
        [("Okt", 10), ("окт", 10), ("мая", 5), ("Mai", 5), ("Dez", 12), ("mars", 3),
         ("févr.", 2), ("jun", 6), ("12月", 12), ("10월", 10), ("Xyz", None)],
    )  # fmt: skip
    def test_month_names(self, month: str, number: int | None) -> None:
        assert month_number(month) == number

    def test_russian_syslog_constructed(self) -> None:
        # Constructed: journalctl's short format under a Russian locale (month "окт").
        parsed = parse_kernel_line("окт 06 17:59:27 balrog kernel: NVRM: Xid (PCI:0000:01:00): 79")
        assert parsed.wall == datetime(PLACEHOLDER_YEAR, 10, 6, 17, 59, 27)
        assert parsed.message.startswith("NVRM: Xid")

    def test_unknown_month_keeps_the_message(self) -> None:
        parsed = parse_kernel_line("Qqq 06 17:59:27 balrog kernel: NVRM: Xid (PCI:0000:01:00): 79")
        assert (parsed.wall, parsed.host) == (None, "balrog")
        assert parsed.message.startswith("NVRM: Xid")

    def test_rfc3339_syslog_with_offset(self) -> None:
        parsed = parse_kernel_line("2025-03-29T15:38:59.5+01:00 gpu1 kernel: NVRM: GPU x")
        assert parsed.wall == datetime(2025, 3, 29, 15, 38, 59, 500000,
                                       tzinfo=timezone(timedelta(hours=1)))  # fmt: skip
        assert (parsed.host, parsed.message) == ("gpu1", "NVRM: GPU x")

    def test_journalctl_short_monotonic(self) -> None:
        parsed = parse_kernel_line("[ 1843.308145] gpu1 kernel: NVRM: GPU at 0000:01:00.0 x")
        assert parsed.kernel_seconds == pytest.approx(1843.308145)
        assert parsed.host == "gpu1"
        assert parsed.message == "NVRM: GPU at 0000:01:00.0 x"

    def test_ctime_and_iso_continuation_widths(self) -> None:
        assert parse_kernel_line(" " * 27 + "NVRM: fallen off the bus").continuation
        assert parse_kernel_line(" " * 48 + "NVRM: fallen off the bus").continuation

    def test_feb_29_without_a_year(self) -> None:
        parsed = parse_kernel_line("Feb 29 10:00:00 host kernel: x")
        assert parsed.wall_in_year(2024) is not None
        assert parsed.wall_in_year(2025) is None

    def test_ordinary_message_is_not_taken_for_a_host(self) -> None:
        parsed = parse_kernel_line("[ 1.000000] usb 1-1: new high-speed USB device number 2")
        assert parsed.message == "usb 1-1: new high-speed USB device number 2"
        assert parsed.host is None

    def test_impossible_dates_leave_the_time_unknown(self) -> None:
        assert parse_kernel_line("2025-13-40T99:00:00+99:00 x").wall is None
        assert parse_kernel_line("[Sun Feb 31 16:24:18 2025] x").wall is None


class TestKmsg:
    def records(self) -> list[str]:
        text = (FIXTURES / "kernel" / "kmsg.txt").read_text()
        lines = [line for line in text.splitlines() if not line.startswith("#")]
        records: list[str] = []
        for line in lines:
            if line.startswith(" "):
                records[-1] += line + "\n"
            else:
                records.append(line + "\n")
        return records

    def test_documented_example(self) -> None:
        first, _, third, fourth = (parse_kmsg_record(r) for r in self.records())
        assert first is not None and third is not None and fourth is not None
        assert (first.facility, first.level, first.seq, first.usec) == (0, 7, 160, 424069)
        assert first.fields == {"SUBSYSTEM": "acpi", "DEVICE": "+acpi:PNP0A03:00"}
        assert first.message.endswith("(ignored)")
        assert (third.facility, third.level, third.level_name) == (3, 6, "info")
        assert fourth.monotonic_seconds == pytest.approx(1809.884084)
        assert fourth.to_kernel_line().message.startswith("NVRM: Xid")

    def test_escapes_and_extra_header_fields(self) -> None:
        # Constructed from the escapes measured in kernel-log.md section 7.
        record = parse_kmsg_record(b"4,9,10,-,caller=T1946;a\\x0ab\\x5cc\\x01 \\xc3\\xa9\n")
        assert record is not None
        assert record.message == "a\nb\\c\x01 é"
        assert record.caller == "T1946"

    @pytest.mark.parametrize("raw", ["", "no header", "1,2;x", "a,b,c,-;x", "-1,2,3,-;x"])
    def test_malformed(self, raw: str) -> None:
        assert parse_kmsg_record(raw) is None

    def test_unescape_without_escapes_is_identity(self) -> None:
        assert unescape_kmsg("plain") == "plain"


class TestAssembler:
    def test_lines_pass_through_and_continuations_join(self) -> None:
        assembler = RecordAssembler()
        lines = ["[ 1.0] first", "[ 2.0] second", "               more", "", "[ 3.0] third"]
        out = [assembler.feed(line, n) for n, line in enumerate(lines, start=1)]
        assert out == [None, RawRecord("[ 1.0] first", 1), None, None,
                       RawRecord("[ 2.0] second\nmore", 2)]  # fmt: skip
        assert assembler.flush() == RawRecord("[ 3.0] third", 5)
        assert assembler.flush() is None
        assert parse_kernel_line("[ 2.0] second\nmore").message == "second\nmore"

    def test_indented_prefixed_line_starts_a_record(self) -> None:
        assembler = RecordAssembler()
        assembler.feed("[ 1.0] first")
        assert assembler.feed("    [ 2.0] second") == RawRecord("[ 1.0] first", 0)
        assert assembler.flush() == RawRecord("[ 2.0] second", 0)

    def test_orphan_continuation_becomes_its_own_record(self) -> None:
        assembler = RecordAssembler()
        assert assembler.feed("   orphan", 7) is None
        assert assembler.flush() == RawRecord("orphan", 7)


PARSERS = (
    parse_kernel_line,
    parse_kmsg_record,
    parse_gpu_line,
    xid.parse_gpu_message,
    xid.normalize_pci_bus_id,
    parse_misc_line,
    kernel_misc.parse_misc_message,
    kernel_misc.parse_aer,
    kernel_misc.parse_oom_kill,
    kernel_misc.parse_hung_task,
    month_number,
    unescape_kmsg,
)


def mutate(line: str, data: st.DataObject) -> str:
    """Cut, splice, duplicate or overwrite a slice of a real line."""
    cut = data.draw(st.integers(0, len(line)))
    end = data.draw(st.integers(cut, len(line)))
    insert = data.draw(st.text(max_size=12) | st.sampled_from(["(", ")", ":", ",", "\n", " ", "_"]))
    return data.draw(
        st.sampled_from(
            [line[:cut], line[cut:], line[:cut] + insert + line[end:], line[:end] + line[cut:]]
        )
    )


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_mutated_lines_never_raise(data: st.DataObject) -> None:
    line = data.draw(st.sampled_from(CORPUS_LINES + KERNEL_FIXTURE_LINES))
    text = mutate(line, data)
    for parser in PARSERS:
        parser(text)
    assembler = RecordAssembler()
    assembler.feed(text)
    assembler.feed("   " + text)
    assembler.flush()


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=200) | st.text(max_size=200))
def test_random_input_never_raises(raw: bytes | str) -> None:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    for parser in PARSERS:
        parser(text)
    parse_kmsg_record(raw if isinstance(raw, bytes) else raw.encode("utf-8", "replace"))


@given(code=st.integers())
def test_catalog_lookup_is_total(code: int) -> None:
    assert xid_catalog.lookup(code).code == code


class TestCarriedPrefixes:
    """Prefixes of item 10 of the signal-quality issue (tests/fixtures/signal/SOURCES.md)."""

    def test_talos_dmesg_real_line(self) -> None:
        line = (SIGNAL / "kernel-ts-talos-gsp-coredump.log").read_text().splitlines()[0]
        parsed = parse_kernel_line(line)
        assert parsed.message.startswith("NVRM: kflcnCoreDumpNondestructive_IMPL: TRACE: 08")
        assert parsed.wall == datetime(2026, 4, 22, 21, 27, 51, 291660, tzinfo=UTC)
        assert (parsed.host, parsed.facility, parsed.level) == ("192.168.11.119", "kern", "warn")

    def test_talos_padded_fields_from_its_documentation(self) -> None:
        parsed = parse_kernel_line(
            "172.20.1.2: kern:    info: [2021-11-10T10:09:37.662764956Z]: Command line: "
            "init_on_alloc=1 slab_nomerge pti=on"
        )
        assert parsed.message.startswith("Command line:") and parsed.level == "info"

    def test_compose_and_pipe_carriers(self) -> None:
        """CONSTRUCTED (no public paste found, SOURCES.md): a fixture line under a carrier."""
        head = "[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0"
        for carrier in ("dmesg-1  | ", "  | "):
            parsed = parse_kernel_line(carrier + head)
            assert parsed.kernel_seconds == 1843.308145
            assert parsed.message == "NVRM: The NVIDIA GPU 0000:b3:00.0"
        assert is_continuation("dmesg-1  |                NVRM: (PCI ID: 10de:26b5) installed")
        assert not is_continuation("     Mar 21 21:42:01 kernel: NVRM: GPU0 x")  # journal, indented

    def test_indented_journal_lines_are_records(self) -> None:
        lines = (SIGNAL / "kernel-noxid-gsp-heartbeat-journal.log").read_text().splitlines()
        assembler = RecordAssembler()
        records = [r for n, x in enumerate(lines, 1) if (r := assembler.feed(x, n))]
        records.append(assembler.flush())
        assert len(records) == len(lines)
