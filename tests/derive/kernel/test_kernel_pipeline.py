"""The kernel pipeline: corpus lines in, events and counter increments out, on explicit times.

Real lines come from tests/fixtures/corpus/xid-lines.jsonl (by index) and tests/fixtures/kernel/.
Lines marked CONSTRUCTED are not captures: the host-A Xid 31 pair follows reference/host.md in the
format of the corpus's Xid 31 lines; the others reuse a corpus line's format with another bus id
or code where the corpus has no line for the case (Xid 140 is named by host.md without its text).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO
from inferwatch.derive.effects import CounterInc, Effect
from inferwatch.derive.kernel import metrics as m
from inferwatch.derive.kernel.effects import alertable, kernel_input
from inferwatch.derive.kernel.mmu_repeats import MAX_HISTORY
from inferwatch.derive.kernel.pipeline import KernelPipeline, PipelineSettings
from inferwatch.event import Event
from inferwatch.parsers.kernel import parse_kernel_line

CORPUS = [
    json.loads(line)["line"]
    for line in (REPO / "tests/fixtures/corpus/xid-lines.jsonl").read_text().splitlines()
]
ALL_RANKS = "software-oob-all-ranks"


def body(index: int) -> str:
    return parse_kernel_line(CORPUS[index]).message


def fixture_bodies(name: str) -> list[str]:
    lines = (REPO / "tests/fixtures/kernel" / name).read_text().splitlines()
    return [parse_kernel_line(x).message for x in lines if x.strip() and not x.startswith("#")]


def x31(bus: str, pid: int, hi: str, *, gpc: int = 4) -> str:
    """CONSTRUCTED host-A Xid 31 (reference/host.md) in the corpus's Xid 31 format."""
    return (
        f"NVRM: Xid (PCI:{bus}): 31, pid={pid}, name=VLLM::Worker, channel 0x00000018, "
        f"intr 00000000. MMU Fault: ENGINE GRAPHICS GPC{gpc} GPCCLIENT_T1_0 faulted @ "
        f"0x{hi}_1b200000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ"
    )


def xid(bus: str, code: int, text: str = "pid=1234, name=python3, Ch 00000001") -> str:
    """CONSTRUCTED: the corpus's `NVRM: Xid (PCI:...): N, ...` shape for codes it lacks."""
    return f"NVRM: Xid (PCI:{bus}): {code}, {text}"


def run(
    messages: Sequence[tuple[float, str]],
    *,
    pipeline: KernelPipeline | None = None,
    alertable_inputs: bool = True,
    flush: bool = True,
) -> list[Effect]:
    pipe = pipeline or KernelPipeline()
    effects: list[Effect] = []
    for n, (at, text) in enumerate(messages, start=1):
        item = kernel_input("kernel", n, at, text, f"boot:{n}", alertable=alertable_inputs)
        effects += pipe.process(item)
    return effects + (pipe.flush() if flush else [])


def events(effects: list[Effect], kind: str) -> list[Event]:
    return [e for e in effects if isinstance(e, Event) and e.type == kind]


def total(effects: list[Effect], name: str, **labels: str) -> float:
    return sum(
        e.delta
        for e in effects
        if isinstance(e, CounterInc) and e.name == name and labels.items() <= dict(e.labels).items()
    )


# --- the multi-GPU software fault -----------------------------------------------------------


def test_host_a_pair_40ms_apart_is_one_software_incident() -> None:
    effects = run([(100.0, x31("0000:01:00", 1, "7f3a")), (100.04, x31("0000:02:00", 2, "7e91"))])
    [incident] = events(effects, "fault_incident")
    d = incident.details
    assert d["classification"] == ALL_RANKS
    assert d["diagnosis"].startswith(
        "every rank executed the same out-of-bounds access: an engine/kernel bug, not hardware"
    )
    assert d["gpus"] == ["0000:01:00.0", "0000:02:00.0"] and incident.at == 100.0
    assert d["xids"] == [31, 31] and d["members"] == ["boot:1", "boot:2"]
    assert total(effects, m.FAULT_INCIDENTS, classification=ALL_RANKS) == 1
    assert [e.details["incident"] for e in events(effects, "xid")] == [None, incident.key]
    assert total(effects, m.MMU_FAULTS, gpc="4", fault_type="FAULT_PDE") == 2
    assert total(effects, m.REPEATED_MMU_FAULTS) == 0


def test_different_gpcs_make_no_incident() -> None:
    effects = run(
        [(100.0, x31("0000:01:00", 1, "7f3a")), (100.04, x31("0000:02:00", 2, "7e91", gpc=5))]
    )
    assert events(effects, "fault_incident") == []
    assert total(effects, m.XID_ERRORS, xid="31") == 2


def test_third_gpu_joins_instead_of_a_second_incident() -> None:
    msgs = [(100.0 + i * 0.3, x31(f"0000:0{i + 1}:00", i, "7f00")) for i in range(3)]
    effects = run(msgs)
    assert len(events(effects, "fault_incident")) == 1
    assert len({e.details["incident"] for e in events(effects, "xid")[1:]}) == 1


def test_two_sources_delivering_out_of_order_still_correlate() -> None:
    """A record from a second kernel source arrives late, after a newer unrelated record."""
    effects = run(
        [
            (100.04, x31("0000:02:00", 2, "7e91")),
            (101.5, body(24)),
            (100.0, x31("0000:01:00", 1, "7f3a")),
        ]
    )
    [incident] = events(effects, "fault_incident")
    assert incident.at == 100.0 and incident.details["gpus"] == ["0000:01:00.0", "0000:02:00.0"]


def test_one_process_on_three_gpus_at_different_addresses_is_one_software_incident() -> None:
    """openmm#4393 (tests/fixtures/signal): one pid, three GPUs, one second, three addresses."""
    lines = (REPO / "tests/fixtures/signal/kernel-xid31-all-ranks-openmm.log").read_text()
    bodies = [parse_kernel_line(x).message for x in lines.splitlines()]
    effects = run([(100.0, text) for text in bodies])
    [incident] = events(effects, "fault_incident")
    assert (
        incident.details["match"] == "process" and incident.details["signature"]["addr_lo"] is None
    )
    assert incident.details["pids"] == [223309] and "pid 223309" in incident.details["diagnosis"]
    assert total(effects, m.FAULT_INCIDENTS, classification=ALL_RANKS) == 1
    assert len({e.details["incident"] for e in events(effects, "xid")[1:]}) == 1
    assert total(effects, m.REPEATED_MMU_FAULTS) == 0


def test_other_processes_at_other_addresses_stay_separate_faults() -> None:
    one = x31("0000:01:00", 1, "7f3a").replace("VLLM::Worker", "trainer")
    two = x31("0000:02:00", 2, "7e91").replace("VLLM::Worker", "renderer").replace("1b2", "2c0")
    assert events(run([(100.0, one), (100.04, two)]), "fault_incident") == []


def test_state_stays_bounded_over_a_long_stream() -> None:
    pipe = KernelPipeline()
    messages = [body(i) for i in (1, 6, 9, 15, 18, 19, 24, 27, 38, 39, 41)]
    for n in range(20_000):
        text = re.sub(r"PCI:0000:[0-9a-f]{2}", f"PCI:0000:{n % 16:02x}", messages[n % 11])
        pipe.process(kernel_input("k", n, n * 0.25, text, f"k:{n}"))
    assert pipe.state_size <= 16 * MAX_HISTORY + 100  # per-GPU repeat history dominates


# --- single-GPU incidents and follow-ons ----------------------------------------------------


def test_single_xid_140_is_one_hardware_incident() -> None:
    effects = run([(50.0, xid("0000:02:00", 140, "pid='<unknown>', name=<unknown>, constructed"))])
    [incident] = events(effects, "fault_incident")
    assert incident.details["classification"] == "hardware-memory"
    assert (
        incident.details["gpus"] == ["0000:02:00.0"] and incident.details["severity"] == "critical"
    )
    assert "Xid 140" in incident.details["diagnosis"]
    assert total(effects, m.FAULT_INCIDENTS, classification="hardware-memory") == 1


def test_xid_45_after_79_attaches_to_its_incident() -> None:
    follow = xid("0000:91:00", 45)  # corpus line 27's format on line 6's GPU
    effects = run([(10.0, body(6)), (10.5, follow)])
    [incident] = events(effects, "fault_incident")
    fall_off, cleanup = events(effects, "xid")
    assert incident.details["classification"] == "hardware-bus"
    assert cleanup.details["incident"] == incident.key == fall_off.details["incident"]
    assert cleanup.details["follow_on"] and cleanup.details["follows"] == fall_off.key
    assert cleanup.details["follows_xid"] == 79
    assert total(effects, m.FAULT_INCIDENTS) == 1


def test_xid_154_after_62_attaches_and_carries_the_recovery_action() -> None:
    effects = run([(10.0, body(39)), (10.2, body(38))])  # same GPU, as in the forum thread
    [incident] = events(effects, "fault_incident")
    assert incident.details["classification"] == "hardware-other"
    recovery = events(effects, "xid")[1]
    assert recovery.details["incident"] == incident.key and recovery.details["follow_on"]
    assert recovery.details["severity"] == "critical"
    assert recovery.details["recovery_action"]["action"] == "GPU_RESET"
    assert recovery.details["recovery_action"]["blocks_gpu"] is True


def test_solo_45_is_not_a_follow_on_unless_its_text_names_the_cause() -> None:
    solo, named = events(run([(1.0, xid("0000:01:00", 45)), (100.0, body(27))]), "xid")
    assert not solo.details["follow_on"] and solo.details["incident"] is None
    assert named.details["follow_on"] and named.details["follows_xid"] == 149
    assert named.details["caused_by_xid"] == 149


def test_burst_of_48_is_one_incident_but_a_worse_code_is_not_hidden() -> None:
    burst = [(20.0 + i * 0.001, body(41)) for i in range(8)]  # 48 repeats once per channel
    effects = run(burst)
    assert total(effects, m.XID_ERRORS, xid="48") == 8
    assert len(events(effects, "fault_incident")) == 1
    effects = run([(1.0, body(17)), (1.5, xid("0000:01:00", 79, "GPU has fallen off the bus."))])
    assert [i.details["xid"] for i in events(effects, "fault_incident")] == [32, 79]


def test_several_gpus_falling_off_together_name_each_other() -> None:
    buses = ["0000:06:00", "0000:07:00", "0000:09:00"]  # the forum thread's simultaneous 79s
    effects = run(
        [(5.0 + i * 0.1, xid(b, 79, "GPU has fallen off the bus.")) for i, b in enumerate(buses)]
    )
    incidents = events(effects, "fault_incident")
    assert len(incidents) == 3
    assert incidents[2].details["shared_with"] == ["0000:06:00.0", "0000:07:00.0"]
    assert "shared cause" in incidents[2].details["diagnosis"]


def test_implied_and_explicit_79_count_once_in_either_order() -> None:
    for pair in ([(10.0, body(6)), (10.000004, body(7))], [(10.0, body(7)), (10.000004, body(6))]):
        effects = run(pair)
        assert len(events(effects, "xid")) == 1
        assert total(effects, m.XID_ERRORS, xid="79") == 1
        assert len(events(effects, "fault_incident")) == 1
    apart = run([(10.0, body(6)), (40.0, body(7))])
    assert total(apart, m.XID_ERRORS, xid="79") == 2


def test_multi_line_fall_off_record_is_an_implied_79() -> None:
    record = "\n".join(body(i) if i == 31 else CORPUS[i].strip() for i in (31, 32, 33))
    [fall_off] = events(run([(1.0, record)]), "xid")
    assert fall_off.details["implied"] and fall_off.details["pci_bus_id"] == "0000:b3:00.0"


# --- alertability, repeats, mapping ---------------------------------------------------------


def test_old_records_still_count_but_are_marked_not_alertable() -> None:
    effects = run([(1.0, body(6)), (2.0, x31("0000:01:00", 1, "7f3a")), (2.04, x31("0000:02:00", 2, "1"))],
                  alertable_inputs=False)  # fmt: skip
    assert len(events(effects, "xid")) == 3 and len(events(effects, "fault_incident")) == 2
    assert total(effects, m.XID_ERRORS) == 3
    assert effects and not any(alertable(e) for e in effects)


def test_repeated_isolated_mmu_faults_on_one_gpu_count_after_they_settle() -> None:
    pipe = KernelPipeline()
    first = run([(10.0, body(15))], pipeline=pipe, flush=False)
    second = run([(3610.0, body(18))], pipeline=pipe, flush=False)  # same GPU, an hour later
    assert total(first + second, m.REPEATED_MMU_FAULTS) == 0  # not settled yet
    settled = pipe.advance(3615.0)
    assert total(settled, m.REPEATED_MMU_FAULTS, pci_bus_id="0000:01:00.0") == 1
    assert pipe.advance(3614.0) == []  # time never goes back


def test_different_processes_faulting_on_one_gpu_over_an_hour_are_repeats() -> None:
    """pytorch#51382 (tests/fixtures/signal): three pids, one GPU, 50 minutes, three addresses."""
    text = (REPO / "tests/fixtures/signal/kernel-xid31-repeated-pytorch.log").read_text()
    parsed = [parse_kernel_line(x) for x in text.splitlines()]
    pipe = KernelPipeline()
    effects: list[Effect] = []
    for n, line in enumerate(parsed):  # dmesg -T: 1 s wall-clock prefixes, in order
        at = float(n * 600)  # ten minutes apart: each burst settles before the next
        effects += pipe.process(kernel_input("k", n, at, line.message, f"k:{n}"))
        effects += pipe.advance(at + 5.0)
    effects += pipe.flush()
    assert total(effects, m.REPEATED_MMU_FAULTS, pci_bus_id="0000:db:00.0") == 2
    assert total(effects, m.REPEATED_MMU_FAULTS) == 2  # the Xid 43s on 3d:00 are not MMU faults
    assert events(effects, "fault_incident") == []


def test_one_process_faulting_again_on_its_gpu_is_not_a_repeat() -> None:
    """The same pid at another address an hour later: the application's bug, not the card."""
    again = [(10.0, x31("0000:01:00", 7, "7f3a")), (3610.0, x31("0000:01:00", 7, "7f3b"))]
    assert total(run(again), m.REPEATED_MMU_FAULTS) == 0
    other = [(10.0, x31("0000:01:00", 7, "7f3a")), (3610.0, x31("0000:01:00", 8, "7f3b"))]
    assert total(run(other), m.REPEATED_MMU_FAULTS) == 1


def test_multi_gpu_software_faults_are_not_hardware_repeats() -> None:
    pair = [(10.0, x31("0000:01:00", 1, "7f3a")), (10.04, x31("0000:02:00", 2, "7e91"))]
    again = [(4000.0, x31("0000:01:00", 5, "7f3b")), (4000.04, x31("0000:02:00", 6, "7e92"))]
    effects = run(pair + again)
    assert len(events(effects, "fault_incident")) == 2
    assert total(effects, m.REPEATED_MMU_FAULTS) == 0


def test_mapping_line_gives_later_xids_their_uuid() -> None:
    effects = run([(1.0, body(0)), (2.0, body(1))])
    [mapping] = events(effects, "gpu_mapping")
    assert mapping.details["uuid"] == "GPU-509665ad-b600-ac93-3616-d754b23d636d"
    assert events(effects, "xid")[0].details["uuid"] == mapping.details["uuid"]


# --- other kernel records -------------------------------------------------------------------


def test_sxid_continuation_lines_make_one_event() -> None:
    data = "nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Data {0x0}"  # CONSTRUCTED
    effects = run([(1.0, body(9)), (1.001, data), (1.002, body(10))])
    assert [e.labels["pci_bus_id"] for e in events(effects, "sxid")] == [
        "0000:06:00.0",
        "0000:05:00.0",
    ]
    assert total(effects, m.SXID_ERRORS, sxid="20034") == 2


def test_aer_oom_and_hung_tasks() -> None:
    aer = fixture_bodies("aer.txt")
    effects = run([(1.0 + i, text) for i, text in enumerate(aer)])
    bus_errors = [e for e in events(effects, "aer") if e.details["kind"] == "bus_error"]
    assert bus_errors and total(effects, m.AER_ERRORS) == len(bus_errors)
    assert total(effects, m.AER_ERRORS, device="0000:03:04.0", severity="uncorrected-fatal") == 1
    oom = fixture_bodies("oom.txt")
    effects = run([(1.0 + i, text) for i, text in enumerate(oom)])
    assert total(effects, m.OOM_KILLS) == len(events(effects, "oom_kill")) == len(oom)
    hung = fixture_bodies("hung-task.txt")
    effects = run([(1.0 + i, text) for i, text in enumerate(hung)])
    assert len(events(effects, "hung_task")) == len(hung) == total(effects, m.HUNG_TASKS)


def test_live_and_replay_see_the_same_effects() -> None:
    msgs = [(1.0 + i * 0.5, parse_kernel_line(line).message) for i, line in enumerate(CORPUS)]
    assert run(msgs) == run(msgs)


# --- properties over random corpus sequences ------------------------------------------------

MESSAGES = [body(i) for i in range(len(CORPUS)) if not parse_kernel_line(CORPUS[i]).continuation]
MESSAGES += [x31("0000:01:00", 1, "7f3a"), x31("0000:02:00", 2, "7e91"), x31("0000:03:00", 3, "1")]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0, 60, allow_nan=False), st.sampled_from(MESSAGES), st.booleans()),
        max_size=60,
    ),
    st.floats(0.1, 5.0),
)
def test_random_sequences_never_raise_nor_make_more_incidents_than_faults(
    items: list[tuple[float, str, bool]], window: float
) -> None:
    pipe = KernelPipeline(PipelineSettings(correlation_window=window))
    effects: list[Effect] = []
    for n, (at, text, ok) in enumerate(items):
        effects += pipe.process(kernel_input("k", n, at, text, f"k:{n}", alertable=ok))
    effects += pipe.flush()
    faults = events(effects, "xid")
    assert len(events(effects, "fault_incident")) <= len(faults)
    assert total(effects, m.XID_ERRORS) == len(faults)
    for effect in effects:
        if isinstance(effect, CounterInc):
            spec = m.KERNEL_METRIC_HELP[effect.name]
            assert {k for k, _ in effect.labels} <= set(spec.labels)
    # at most one entry per record in each windowed structure that can hold it (the incident,
    # repeat, fall-off and NVML-echo trackers, with the correlator's sightings)
    assert pipe.state_size <= 5 * len(items) + 8


XID119 = (  # corpus line (leptonai/gpud testdata), prefix stripped
    "NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting "
    "for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4)."
)
HEARTBEAT = "NVRM: GPU{n} _kgspRpcRecvPoll: GSP RM heartbeat timed out"  # bazzite#4449, GPU{n}


def driver_faults(effects: Sequence[Effect]) -> list[Event]:
    return [e for e in effects if isinstance(e, Event) and e.type == "gpu_driver_fault"]


def driver_counts(effects: Sequence[Effect]) -> list[CounterInc]:
    return [e for e in effects if isinstance(e, CounterInc) and e.name == m.DRIVER_FAULTS]


def test_driver_fault_without_xid_counts_under_the_drivers_number() -> None:
    effects = run([(10.0, HEARTBEAT.format(n=0))])
    (event,) = driver_faults(effects)
    assert event.details["kind"] == "gsp_heartbeat_timeout" and event.details["nvrm_gpu"] == 0
    assert event.details["pci_bus_id"] is None and event.details["counted"] is True
    (inc,) = driver_counts(effects)
    assert dict(inc.labels) == {"nvrm_gpu": "GPU0", "kind": "gsp_heartbeat_timeout"}


def test_an_xid_pairs_the_number_with_its_bus_and_covers_its_own_report() -> None:
    effects = run([(10.0, XID119), (10.5, HEARTBEAT.format(n=4)), (30.0, HEARTBEAT.format(n=4))])
    first, later = driver_faults(effects)
    assert first.details["pci_bus_id"] == "0000:9b:00.0"  # GPU4, as the Xid line paired them
    assert first.details["covered_by_xid"] == 119 and first.details["counted"] is False
    assert later.details["counted"] is True  # 20 s later: no longer the Xid's own report
    (inc,) = driver_counts(effects)
    assert dict(inc.labels) == {"pci_bus_id": "0000:9b:00.0", "kind": "gsp_heartbeat_timeout"}


def test_an_unpaired_number_is_never_guessed_into_a_bus_id() -> None:
    wpr2 = "NVRM: GPU6 _kgspBootGspRm: unexpected WPR2 already up, cannot proceed with booting GSP"
    init = "NVRM: GPU 0000:a1:00.0: RmInitAdapter failed! (0x62:0x40:2168)"
    effects = run([(1.0, wpr2), (1.1, init)])
    boot, failed = driver_faults(effects)
    assert boot.details["pci_bus_id"] is None and boot.details["counted"] is False
    assert failed.details["pci_bus_id"] == "0000:a1:00.0" and failed.details["counted"] is True
    assert [dict(i.labels) for i in driver_counts(effects)] == [
        {"pci_bus_id": "0000:a1:00.0", "kind": "init_failed"}
    ]


def test_old_driver_faults_are_counted_but_never_alert() -> None:
    item = kernel_input("k", 1, 5.0, HEARTBEAT.format(n=0), "k:1", alertable=False)
    effects = KernelPipeline().process(item)
    assert driver_counts(effects) and not any(alertable(e) for e in effects)
