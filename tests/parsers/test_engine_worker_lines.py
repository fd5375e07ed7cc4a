"""Worker deaths, worker exceptions, colour remnants and pasted prefixes (signal-quality issue,
item 11).

Lines marked VERBATIM are copied from the public thread named beside them (each is one whole
log line as posted there); lines marked CONSTRUCTED follow the templates of
reference/engine.md and say what they are built from.
"""

from __future__ import annotations

import pytest

from inferwatch.parsers.engine import EngineCrash, EngineStats, TracebackGrouper
from inferwatch.parsers.engine import parse_engine_line as parse
from inferwatch.parsers.engine_precheck import ENGINE_KEYWORDS
from inferwatch.parsers.engine_records import is_fault, stopped_on_purpose
from inferwatch.parsers.engine_text import clean_message, strip_colour

# VERBATIM, vllm-project/vllm#6823 (issue title): a V0 worker killed by SIGSEGV.
V0_SEGV = (
    "ERROR 07-26 14:50:35 multiproc_worker_utils.py:120] Worker VllmWorkerProcess pid 214281 "
    "died, exit code: -11"
)
# VERBATIM, vllm-project/vllm#6145 (issue description, inline code): exit code -15.
V0_TERM = (
    "ERROR 07-04 23:23:23 multiproc_worker_utils.py:120] Worker VllmWorkerProcess pid 3283517 "
    "died, exit code: -15."
)
# VERBATIM, vllm-project/vllm#14452 (lambo111-x86, 2025-03-15), tests/fixtures/signal.
V1_FATAL_SIGNAL = (
    "CRITICAL 03-15 17:24:18 [multiproc_executor.py:48] MulitprocExecutor got fatal signal "
    "from worker processes, shutting down. See stack trace above for root cause issue."
)
# VERBATIM, huggingface/trl#3310 (turn 8, zzzzzec): the client's spelling of the same signal.
CLIENT_FATAL_SIGNAL = (
    "CRITICAL 04-17 23:05:06 [core_client.py:361] Got fatal signal from worker processes, "
    "shutting down. See stack trace above for root cause issue."
)
# VERBATIM, vllm-project/vllm#18577 (LTyanghuang, 2025-06-10).
WORKER_START = (
    "(VllmWorker rank=2 pid=808339) ERROR 06-10 03:43:33 [multiproc_executor.py:487] "
    "WorkerProc failed to start."
)
# VERBATIM, vllm-project/vllm#20170 (xiaocode337317439): V1 worker exception, then its frames.
_W = "(VllmWorker rank=3 pid=226) ERROR 06-26 23:10:17 [multiproc_executor.py:527] "
WORKER_EXCEPTION = [
    _W + "WorkerProc hit an exception.",
    _W + "Traceback (most recent call last):",
    _W + '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py"'
    ", line 522, in worker_busy_loop",
    _W + "    output = func(*args, **kwargs)",
    _W + '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py", line '
    "293, in execute_model",
]


@pytest.mark.parametrize(
    ("line", "exit_code", "fault"),
    [(V0_SEGV, -11, True), (V0_TERM, -15, False)],
)
def test_v0_worker_death_carries_its_exit_code(line: str, exit_code: int, fault: bool) -> None:
    record = parse(line)
    assert isinstance(record, EngineCrash)
    assert record.signature == "worker_died" and record.exit_code == exit_code
    assert record.to_dict(prefix=False)["exit_code"] == exit_code
    # SIGTERM is what `systemctl stop` sends every process: no crash by itself.
    assert is_fault(record) is fault and stopped_on_purpose(record) is not fault


@pytest.mark.parametrize("line", [V1_FATAL_SIGNAL, CLIENT_FATAL_SIGNAL])
def test_fatal_signal_from_workers_is_a_worker_death(line: str) -> None:
    record = parse(line)
    assert isinstance(record, EngineCrash) and record.signature == "worker_died"
    assert record.prefix.level == "CRITICAL" and is_fault(record)


def test_worker_failed_to_start_is_a_start_up_failure() -> None:
    record = parse(WORKER_START)
    assert isinstance(record, EngineCrash) and record.signature == "startup_failed"
    assert record.prefix.proc == "VllmWorker rank=2"


def test_new_anchors_are_scanned_for() -> None:
    for anchor in (" died, exit code", "fatal signal from worker processes",
                   "WorkerProc hit an exception", "WorkerProc failed to start"):  # fmt: skip
        assert anchor in ENGINE_KEYWORDS


def group(lines: list[str]) -> list[dict[str, object]]:
    grouper = TracebackGrouper()
    out = []
    for number, line in enumerate(lines, 1):
        out += grouper.feed(parse(line), number)
    return [g.to_dict() for g in out + grouper.flush()]


def test_worker_exception_in_a_model_step_is_an_incident() -> None:
    (g,) = group(WORKER_EXCEPTION)
    assert g["signature"] == "worker_exception" and g["incident"] is True
    assert g["line"] == 1 and g["last_line"] == 5


def test_worker_exception_outside_a_model_step_is_not() -> None:
    # CONSTRUCTED from the lines above: the same exception raised under another RPC (adding a
    # LoRA adapter): the engine answers that request with an error and lives on.
    lora = _W + '  File "/x/vllm/v1/worker/gpu_worker.py", line 310, in add_lora'
    (g,) = group([*WORKER_EXCEPTION[:4], lora, _W + "ValueError: adapter not found"])
    assert g["incident"] is False and g["exception"] == "ValueError"


def test_deaths_by_stop_signal_open_no_incident() -> None:
    (term,) = group([V0_TERM])
    (segv,) = group([V0_SEGV])
    assert term["incident"] is False and segv["incident"] is True


def test_ansi_remnant_before_the_process_tag() -> None:
    # VERBATIM first line of tests/fixtures/signal/engine-crash-ansi-remnant-ima.log (vllm#14404):
    # the chunk began inside the escape sequence.
    line = (
        "1;36m(VllmWorker rank=5 pid=33503) ERROR 03-06 06:49:30 [multiproc_executor.py:375] "
        "WorkerProc hit an exception: %s"
    )
    record = parse(line)
    assert isinstance(record, EngineCrash) and record.signature == "worker_exception"
    assert record.prefix.wrapper is None and record.prefix.proc == "VllmWorker rank=5"
    assert record.prefix.level == "ERROR"


@pytest.mark.parametrize(
    "line",
    [
        # CONSTRUCTED (engine.md 1.2): colour codes whose ESC byte a paste dropped.
        "[1;36m(VllmWorker rank=0 pid=1)[0;0m ERROR 03-06 06:49:30 [multiproc_executor.py:375] "
        "RuntimeError: CUDA error: an illegal memory access was encountered[0m",
        # CONSTRUCTED: the same with the ESC bytes kept.
        "\x1b[1;36m(VllmWorker rank=0 pid=1)\x1b[0;0m ERROR 03-06 06:49:30 "
        "[multiproc_executor.py:375] RuntimeError: CUDA error: an illegal memory access was "
        "encountered\x1b[0m",
        # CONSTRUCTED (engine.md 1.1): a compose prefix, then a pasted `| ` inside the message.
        "vllm-1  | (VllmWorker rank=0 pid=1) ERROR 03-06 06:49:30 [multiproc_executor.py:375] "
        "| RuntimeError: CUDA error: an illegal memory access was encountered",
    ],
)
def test_root_cause_is_clean_of_remnants(line: str) -> None:
    record = parse(line)
    assert isinstance(record, EngineCrash) and record.signature == "illegal_memory_access"
    assert record.prefix.proc == "VllmWorker rank=0" and record.prefix.level == "ERROR"
    assert record.message.endswith("CUDA error: an illegal memory access was encountered")
    assert "[0" not in record.message and not record.message.startswith("|")


def test_clean_message() -> None:
    assert clean_message("  svc-1  | | boom[0m ") == "boom"
    assert clean_message("1;36m(x") == "(x"
    assert clean_message("a | b") == "a | b"  # only a separator in front is a paste
    assert strip_colour("[2024-11-29 10:28:29 TP0] x") == "[2024-11-29 10:28:29 TP0] x"


def test_sglang_prefill_with_cache_hit_rate() -> None:
    # VERBATIM first line of tests/fixtures/signal/engine-sglang-prefill-cache-hit-rate.log.
    line = (
        "[2024-11-29 10:28:29 TP0] Prefill batch. #new-seq: 2, #new-token: 2048, #cached-token: "
        "888, cache hit rate: 0.00%, token usage: 0.11, #running-req: 69, #queue-req: 130"
    )
    record = parse(line)
    assert isinstance(record, EngineStats) and record.format == "sglang_prefill"
    assert record.prefix_cache_hit_pct == 0.0 and record.cached_tokens == 888
    assert (record.running, record.waiting, record.kv_usage_pct) == (69, 130, 11.0)
