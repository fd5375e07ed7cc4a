"""VRAM by process: real children (running, zombie, reparented, gone) and a written /proc."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from conftest import wait_until
from inferwatch.labels import label_value
from inferwatch.model import Sample
from inferwatch.sources.cgroup_unit import unit_from_cgroup
from inferwatch.sources.gpu_processes import (
    DROPPED_METRIC,
    FORGET_AFTER_POLLS,
    MAX_SERIES_PER_GPU,
    MEMORY_METRIC,
    ORPHANED_METRIC,
    GpuProcessUse,
    ProcessState,
    ProcessTable,
)

GPU0 = ("0", "GPU-11111111-2222-3333-4444-555555555555", "0000:03:00.0")
GPU1 = ("1", "GPU-66666666-7777-8888-9999-000000000000", "0000:04:00.0")
GIB = float(2**30)
PR_SET_CHILD_SUBREAPER = 36
NEVER_A_PID = int(Path("/proc/sys/kernel/pid_max").read_text(encoding="ascii"))


def use(
    pid: int, gib: float | None, gpu: tuple[str, str, str] = GPU0, kind: str = "compute"
) -> GpuProcessUse:
    return GpuProcessUse(*gpu, pid, None if gib is None else gib * GIB, kind)


def memory(samples: tuple[Sample, ...], gpu: tuple[str, str, str] = GPU0) -> dict[int, Sample]:
    return {
        int(label_value(s.labels, "pid")): s
        for s in samples
        if s.name == MEMORY_METRIC and label_value(s.labels, "gpu") == gpu[0]
    }


def gauge(samples: tuple[Sample, ...], name: str, gpu: tuple[str, str, str] = GPU0) -> float:
    (value,) = [
        s.value for s in samples if s.name == name and label_value(s.labels, "gpu") == gpu[0]
    ]
    return value


def state(samples: tuple[Sample, ...], pid: int) -> str:
    return label_value(memory(samples)[pid].labels, "state")


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Children the test starts; killed and reaped afterwards (zombies included)."""
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
        with p:  # closes its pipes and waits: reaped
            pass


def is_zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.fixture
def zombie(children: list[subprocess.Popen[bytes]]) -> int:
    """A real zombie: a child that exited and that the test does not reap (until teardown)."""
    child = subprocess.Popen(["true"])
    children.append(child)
    wait_until(lambda: is_zombie(child.pid), 10, "the child to become a zombie")
    return child.pid


@pytest.fixture
def sleeper(children: list[subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    child = subprocess.Popen(["sleep", "30"])
    children.append(child)
    # the name changes before the new command line is readable (mid-exec): wait for both
    wait_until(
        lambda: psutil.Process(child.pid).cmdline() == ["sleep", "30"],
        10,
        "the child to exec sleep",
    )
    return child


def test_a_running_child_is_running_with_its_facts(sleeper: subprocess.Popen[bytes]) -> None:
    child = sleeper
    table = ProcessTable()
    out = table.samples([GPU0], [use(child.pid, 2)])
    s = memory(out)[child.pid]
    assert s.value == 2 * GIB
    unit = unit_from_cgroup(Path(f"/proc/{child.pid}/cgroup").read_text(encoding="utf-8"))
    expected = {"gpu": "0", "uuid": GPU0[1], "pci_bus_id": GPU0[2], "pid": str(child.pid)}
    expected |= {"name": "sleep", "state": "running"} | ({"unit": unit} if unit else {})
    assert dict(s.labels) == expected  # an empty unit (none here in a container) is no label
    assert gauge(out, ORPHANED_METRIC) == 0.0
    (seen,) = table.processes
    assert (seen.cmdline, seen.parent_pid, seen.kinds) == (
        ("sleep", "30"),
        os.getpid(),
        ("compute",),
    )
    assert seen.started_at == psutil.Process(child.pid).create_time()


def test_a_real_zombie_is_orphaned_by_pid(zombie: int) -> None:
    """A child that exited and that nobody reaped (defunct) still holds what NVML says."""
    out = ProcessTable().samples([GPU0], [use(zombie, 55), use(NEVER_A_PID, 1)])
    assert state(out, zombie) == "zombie"
    assert label_value(memory(out)[zombie].labels, "name") == "true"
    assert gauge(out, ORPHANED_METRIC) == 55 * GIB


def test_a_process_that_exits_between_polls_is_gone(sleeper: subprocess.Popen[bytes]) -> None:
    child = sleeper
    table = ProcessTable()
    assert state(table.samples([GPU0], [use(child.pid, 3)]), child.pid) == "running"
    child.kill()
    child.wait(timeout=10)
    out = table.samples([GPU0], [use(child.pid, 3)])
    assert state(out, child.pid) == "gone"
    assert label_value(memory(out)[child.pid].labels, "name") == "sleep"  # the name it had
    assert gauge(out, ORPHANED_METRIC) == 3 * GIB


@pytest.fixture
def subreaper() -> Iterator[None]:
    """This test process adopts its orphaned descendants (as a supervisor would), so the
    reparented grandchild can be reaped here: this machine's init does not reap."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        pytest.skip("prctl(PR_SET_CHILD_SUBREAPER) refused")
    yield
    libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def test_a_worker_whose_parent_exits_is_parent_gone(
    children: list[subprocess.Popen[bytes]], subreaper: None
) -> None:
    """An engine (the shell) starts a worker (sleep) and dies; the worker lives on, adopted."""
    engine = subprocess.Popen(
        ["sh", "-c", "sleep 30 & echo $!; read x"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    children.append(engine)
    assert engine.stdin is not None and engine.stdout is not None
    worker = int(engine.stdout.readline())
    try:
        wait_until(lambda: psutil.Process(worker).name() == "sleep", 10, "the worker to exec")
        table = ProcessTable()
        assert state(table.samples([GPU0], [use(worker, 40)]), worker) == "running"
        engine.stdin.close()  # the engine reads EOF and exits
        engine.wait(timeout=10)
        wait_until(lambda: psutil.Process(worker).ppid() != engine.pid, 10, "the reparenting")
        out = table.samples([GPU0], [use(worker, 40)])
        assert state(out, worker) == "parent_gone"
        assert gauge(out, ORPHANED_METRIC) == 40 * GIB
        assert table.processes[0].parent_pid == engine.pid  # the parent it had, not the adopter
    finally:
        os.kill(worker, signal.SIGKILL)
        os.waitpid(worker, 0)  # adopted by this process: reap it here


def test_a_pid_never_seen_alive_is_unknown_and_not_orphaned() -> None:
    out = ProcessTable().samples([GPU0], [use(NEVER_A_PID, 8)])
    s = memory(out)[NEVER_A_PID]
    assert (label_value(s.labels, "state"), s.value) == ("unknown", 8 * GIB)
    assert label_value(s.labels, "name") == ""
    assert gauge(out, ORPHANED_METRIC) == 0.0


def test_every_gpu_gets_the_orphan_gauge_even_without_processes() -> None:
    out = ProcessTable().samples([GPU0, GPU1], [])
    assert gauge(out, ORPHANED_METRIC, GPU0) == gauge(out, ORPHANED_METRIC, GPU1) == 0.0
    assert gauge(out, DROPPED_METRIC, GPU1) == 0.0
    assert [s for s in out if s.name == MEMORY_METRIC] == []


def test_compute_and_graphics_of_one_process_count_once_per_gpu() -> None:
    """NVML reports a C+G process's memory in both lists: the larger, not the sum."""
    uses = [
        use(NEVER_A_PID, 2, kind="compute"),
        use(NEVER_A_PID, 2.5, kind="graphics"),
        use(NEVER_A_PID, 1, gpu=GPU1),
    ]
    table = ProcessTable()
    out = table.samples([GPU0, GPU1], uses)
    assert memory(out, GPU0)[NEVER_A_PID].value == 2.5 * GIB
    assert memory(out, GPU1)[NEVER_A_PID].value == 1 * GIB
    assert [p.kinds for p in table.processes] == [("compute", "graphics"), ("compute",)]


def test_a_use_without_a_figure_is_classified_but_exports_no_memory(zombie: int) -> None:
    table = ProcessTable()
    out = table.samples([GPU0], [use(zombie, None)])
    assert memory(out) == {}
    assert gauge(out, ORPHANED_METRIC) == 0.0
    assert [(p.pid, p.state, p.used_bytes) for p in table.processes] == [
        (zombie, ProcessState.ZOMBIE, None)
    ]


def test_process_series_are_capped_per_gpu_orphans_first(zombie: int) -> None:
    strangers = [use(NEVER_A_PID + i, 10 + i) for i in range(MAX_SERIES_PER_GPU + 2)]
    out = ProcessTable().samples([GPU0], [*strangers, use(zombie, 0.5)])
    kept = memory(out)
    assert len(kept) == MAX_SERIES_PER_GPU
    assert zombie in kept  # the smallest, but orphaned: kept
    assert NEVER_A_PID not in kept and NEVER_A_PID + 1 not in kept  # the two smallest strangers
    assert gauge(out, DROPPED_METRIC) == 3.0
    assert gauge(out, ORPHANED_METRIC) == 0.5 * GIB


# --- a written /proc: start times and parents under the test's control --------------------

BTIME = 1_700_000_000


def write_proc(
    root: Path, pid: int, name: str, ppid: int, start_ticks: int, cgroup: str, status: str = "S"
) -> None:
    """The files psutil and the table read, in the kernel's layout (man 5 proc)."""
    (root / "stat").write_text(f"cpu  0 0 0 0 0 0 0 0 0 0\nbtime {BTIME}\n", encoding="ascii")
    d = root / str(pid)
    d.mkdir(exist_ok=True)
    head = [status, str(ppid), str(pid), str(pid), "0", "-1", "4194560", *["0"] * 12]
    fields = [*head, str(start_ticks), *["0"] * 32]
    (d / "stat").write_text(f"{pid} ({name}) {' '.join(fields)}\n", encoding="ascii")
    (d / "cmdline").write_text(f"{name}\0--serve\0", encoding="ascii")
    (d / "cgroup").write_text(cgroup, encoding="ascii")


@pytest.fixture
def proc_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """psutil's one global proc path: the table sets it, monkeypatch puts it back."""
    monkeypatch.setattr(psutil, "PROCFS_PATH", psutil.PROCFS_PATH)
    return tmp_path


def test_a_table_on_another_proc_root_reads_that_root(proc_root: Path) -> None:
    write_proc(proc_root, 4242, "VLLM::Worker", 4000, 100, "0::/system.slice/flashnext.service\n")
    table = ProcessTable(proc_root)
    assert str(proc_root) == psutil.PROCFS_PATH
    out = table.samples([GPU0], [use(4242, 20)])
    labels = dict(memory(out)[4242].labels)
    assert (labels["name"], labels["unit"], labels["state"]) == (
        "VLLM::Worker", "flashnext.service", "running",
    )  # fmt: skip
    assert table.processes[0].cmdline == ("VLLM::Worker", "--serve")


def test_reparenting_and_pid_reuse(proc_root: Path) -> None:
    table = ProcessTable(proc_root)
    write_proc(proc_root, 4242, "engine", 4000, 100, "0::/system.slice/flashnext.service\n")
    assert state(table.samples([GPU0], [use(4242, 20)]), 4242) == "running"
    write_proc(proc_root, 4242, "engine", 1, 100, "0::/system.slice/flashnext.service\n")
    assert state(table.samples([GPU0], [use(4242, 20)]), 4242) == "parent_gone"
    # The PID is reused by a new process (another start time): its own facts, read afresh.
    write_proc(
        proc_root, 4242, "python3", 1, 9000, "0::/user.slice/user-1000.slice/session-2.scope\n"
    )
    labels = dict(memory(table.samples([GPU0], [use(4242, 20)]))[4242].labels)
    assert (labels["state"], labels["name"], labels["unit"]) == (
        "running",
        "python3",
        "session-2.scope",
    )
    assert table.processes[0].parent_pid == 1
    assert table.processes[0].started_at == BTIME + 9000 / os.sysconf("SC_CLK_TCK")


def test_a_zombie_keeps_the_unit_it_was_seen_in(proc_root: Path) -> None:
    """On cgroup v1 a zombie's cgroup reads as the root: the unit comes from first sight."""
    table = ProcessTable(proc_root)
    write_proc(
        proc_root, 4242, "engine", 4000, 100, "1:name=systemd:/system.slice/flashnext.service\n"
    )
    table.samples([GPU0], [use(4242, 20)])
    write_proc(proc_root, 4242, "engine", 4000, 100, "1:name=systemd:/\n", status="Z")
    labels = dict(memory(table.samples([GPU0], [use(4242, 20)]))[4242].labels)
    assert (labels["state"], labels["unit"]) == ("zombie", "flashnext.service")


def test_a_process_vanishing_mid_read_does_not_raise(proc_root: Path) -> None:
    write_proc(proc_root, 4242, "engine", 4000, 100, "")
    (proc_root / "4242" / "cmdline").unlink()  # its directory emptied between two reads
    out = ProcessTable(proc_root).samples([GPU0], [use(4242, 20)])
    assert state(out, 4242) == "gone"


def test_pids_not_listed_for_a_while_are_forgotten(proc_root: Path) -> None:
    table = ProcessTable(proc_root)
    write_proc(proc_root, 4242, "engine", 4000, 100, "")
    table.samples([GPU0], [use(4242, 20)])
    (proc_root / "4242" / "stat").unlink()
    for _ in range(FORGET_AFTER_POLLS - 1):
        table.samples([GPU0], [])
    assert state(table.samples([GPU0], [use(4242, 20)]), 4242) == "gone"  # still remembered
    for _ in range(FORGET_AFTER_POLLS):
        table.samples([GPU0], [])
    assert state(table.samples([GPU0], [use(4242, 20)]), 4242) == "unknown"  # forgotten
