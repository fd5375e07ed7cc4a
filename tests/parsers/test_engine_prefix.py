"""Prefix stripping of engine log lines (reference/engine.md section 1).

Lines marked `# L<n>` are from tests/fixtures/corpus/engine-lines.txt; the others are built from
the formats engine.md and tailing.md describe (not captured) to cover each layer on its own.
"""

from __future__ import annotations

from typing import Any

import pytest

from inferwatch.parsers.engine_prefix import EMPTY_PREFIX, LinePrefix, split_prefix

CASES: list[tuple[str, dict[str, Any], str]] = [
    # vLLM >= 0.8 header, with and without a process tag
    (
        "(APIServer pid=3646) INFO 05-19 10:13:31 [loggers.py:271] Engine 000: Avg",
        {"proc": "APIServer", "pid": 3646, "level": "INFO", "ts": "05-19 10:13:31"},
        "Engine 000: Avg",
    ),
    (
        "INFO 06-16 10:03:14 [loggers.py:87] Engine 000: x",  # L14 shape
        {"proc": None, "level": "INFO", "ts": "06-16 10:03:14", "header": "vllm"},
        "Engine 000: x",
    ),
    # <= 0.7 header without the opening bracket
    (
        "INFO 02-28 21:48:18 metrics.py:161] Avg prompt",  # L15 shape
        {"level": "INFO", "ts": "02-28 21:48:18"},
        "Avg prompt",
    ),
    # path-style and abbreviated file fields; damaged bracket from a markdown paste
    (
        "(APIServer pid=433) ERROR 05-04 08:51:40 [entrypoints/.../chat_completion/serving.py:1267] "
        "boom",
        {"proc": "APIServer", "level": "ERROR", "ts": "05-04 08:51:40"},
        "boom",
    ),
    (
        "(APIServer pid=1) ERROR 10-20 03:20:50 [serving_chat.py:1136[] Error in chat",  # L28
        {"level": "ERROR", "ts": "10-20 03:20:50"},
        "Error in chat",
    ),
    # traceback code line under a header keeps its indentation
    (
        "(APIServer pid=1) ERROR 11-14 15:11:23 [v1/engine/async_llm.py:525]     outputs = x",
        {"level": "ERROR"},
        "    outputs = x",
    ),
    # docker / k8s timestamps, CRI stream marker
    (
        "2026-05-12T08:01:39.331095044Z (APIServer pid=1) INFO 05-12 08:01:39 [a.py:1] msg",
        {"wrapper": "docker", "wrapper_ts": "2026-05-12T08:01:39.331095044Z", "pid": 1},
        "msg",
    ),
    (
        "2026-05-12T08:01:39.331095044Z stderr F INFO 05-12 08:01:39 [a.py:1] msg",
        {"wrapper": "docker", "level": "INFO"},
        "msg",
    ),
    # compose, also around a docker timestamp
    (
        "qwen3-vl-32b  | (APIServer pid=104) ERROR 12-17 09:16:13 [async_llm.py:480] x",  # L25
        {"wrapper": "compose", "service": "qwen3-vl-32b", "proc": "APIServer"},
        "x",
    ),
    (
        "vllm-1  | 2026-05-12T08:01:39.1Z INFO 05-12 08:01:39 [a.py:1] msg",
        {"wrapper": "compose", "service": "vllm-1", "wrapper_ts": "2026-05-12T08:01:39.1Z"},
        "msg",
    ),
    # journald: English and Russian months, space-padded day, short-iso
    (
        'Aug 19 18:34:30 vllm vllm[8707]: (APIServer pid=8707)   File "/x.py", line 1',  # L65
        {"wrapper": "journald", "wrapper_ts": "Aug 19 18:34:30", "host": "vllm", "level": None},
        '  File "/x.py", line 1',
    ),
    (
        "авг 18 14:15:04 llm python3[27876]: (APIServer pid=27876) INFO 08-18 14:15:04 [a.py:1] m",
        {"wrapper": "journald", "wrapper_ts": "авг 18 14:15:04", "host": "llm", "pid": 27876},
        "m",
    ),
    (
        "Aug  9 01:02:03 gpu-host vllm[1]: INFO 08-09 01:02:03 [a.py:1] m",
        {"wrapper": "journald", "wrapper_ts": "Aug  9 01:02:03", "host": "gpu-host"},
        "m",
    ),
    (
        "2025-08-19T18:34:30+0000 gpu-host vllm[8707]: INFO 08-19 18:34:30 [a.py:1] m",
        {"wrapper": "journald", "wrapper_ts": "2025-08-19T18:34:30+0000", "host": "gpu-host"},
        "m",
    ),
    # a foreign logger re-emitting a uvicorn line (KServe)
    (
        "2025-05-14 17:41:26.325 1645354 uvicorn.error INFO:     Waiting for application startup.",
        {"wrapper": "other", "proc": None, "level": "INFO", "header": "uvicorn"},
        "Waiting for application startup.",
    ),
    # colour codes: ESC byte and caret notation
    (
        "^[[0;36m(APIServer pid=31)^[[0;0m INFO 02-03 19:00:05 [api_server.py:946] Start",  # L61
        {"proc": "APIServer", "pid": 31, "ts": "02-03 19:00:05"},
        "Start",
    ),
    (
        "\x1b[0;36m(APIServer pid=31)\x1b[0;0m \x1b[32mINFO\x1b[0m 02-03 19:00:05 [a.py:9] Start",
        {"proc": "APIServer", "level": "INFO"},
        "Start",
    ),
    # nested tags: innermost wins; Ray's nameless and ip-carrying tags
    (
        "(ServeReplica:app:LLMServer:model-4-5 pid=28488) (EngineCore pid=29087) INFO 08-19 "
        "18:00:14 [kv_cache_utils.py:2177] GPU KV",  # L47 shape
        {"proc": "EngineCore", "pid": 29087},
        "GPU KV",
    ),
    ("(pid=4242) Loading", {"proc": None, "pid": 4242}, "Loading"),
    (
        "(RayWorkerWrapper pid=77, ip=10.0.0.2) INFO 01-01 00:00:00 [w.py:1] hi",
        {"proc": "RayWorkerWrapper", "pid": 77, "level": "INFO"},
        "hi",
    ),
    # raw lines under a tag: no level, no time
    (
        "(EngineCore pid=104) Process EngineCore:",  # L41
        {"proc": "EngineCore", "pid": 104, "level": None, "ts": None},
        "Process EngineCore:",
    ),
    # uvicorn, bare and under a tag
    (
        'INFO:     127.0.0.1:44772 - "GET /metrics HTTP/1.1" 200 OK',  # L82
        {"level": "INFO", "ts": None, "header": "uvicorn"},
        '127.0.0.1:44772 - "GET /metrics HTTP/1.1" 200 OK',
    ),
    (
        "(APIServer pid=333) WARNING:  Invalid HTTP request received.",
        {"proc": "APIServer", "level": "WARNING", "header": "uvicorn"},
        "Invalid HTTP request received.",
    ),
    # SGLang brackets: dated, time-only, DP+TP, no rank, and uvicorn under them
    (
        "[2025-02-27 04:46:39 TP0] Decode batch. x",
        {"ts": "2025-02-27 04:46:39", "tp_rank": 0, "level": None, "header": "sglang"},
        "Decode batch. x",
    ),
    ("[04:40:55 TP3] Decode", {"ts": "04:40:55", "tp_rank": 3}, "Decode"),
    ("[2025-01-01 00:00:00 DP1 TP2] x", {"tp_rank": 2, "dp_rank": 1}, "x"),
    ("[2026-04-05 20:02:51] x", {"ts": "2026-04-05 20:02:51", "tp_rank": None}, "x"),
    (
        '[2026-04-05 20:02:51] INFO:     127.0.0.1:40052 - "POST /v1 HTTP/1.1" 200 OK',  # L68
        {"level": "INFO", "tp_rank": None, "ts": "2026-04-05 20:02:51"},
        '127.0.0.1:40052 - "POST /v1 HTTP/1.1" 200 OK',
    ),
    # torch C++ (glog) headers
    (
        "[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog",
        {"rank": 0, "level": "ERROR", "header": "torch", "wrapper": None},
        "[Rank 0] Watchdog",
    ),
    (
        "[rank3]:[E1012 22:31:22.267261276 ProcessGroupNCCL.cpp:607] [Rank 3] W",
        {"rank": 3, "level": "ERROR", "ts": None},
        "[Rank 3] W",
    ),
    # other libraries' formats: inside a tag, and SGLang's own Python logging at column 0
    (
        "(EngineCore pid=7476) 2026-07-25 13:42:38,525 - INFO - autotuner.py:824 - flashinfer.jit: "
        "go",
        {"proc": "EngineCore", "header": "foreign", "level": "INFO"},
        "flashinfer.jit: go",
    ),
    (
        "2026-06-07 10:59:31,659 [INFO] sglang.srt.managers.scheduler_metrics_mixin: Decode batch",
        {"wrapper": None, "proc": None, "header": "foreign", "ts": "2026-06-07 10:59:31,659"},
        "Decode batch",
    ),
    # an unknown wrapper does not stop the parse: the anchors are searched for
    (
        "myhost 17 | weird: (APIServer pid=9) INFO 01-01 00:00:00 [a.py:1] m",
        {"wrapper": "other", "proc": "APIServer", "level": "INFO"},
        "m",
    ),
    (
        "<12>1 something INFO 01-01 00:00:00 [a.py:1] m",
        {"wrapper": "other", "level": "INFO", "ts": "01-01 00:00:00"},
        "m",
    ),
    # VLLM_LOGGING_PREFIX between the tag and the level is not a wrapper
    (
        "(APIServer pid=1) [node-3] INFO 01-01 00:00:00 [a.py:1] m",
        {"wrapper": None, "proc": "APIServer", "level": "INFO"},
        "m",
    ),
]


@pytest.mark.parametrize(("line", "want", "body"), CASES, ids=[c[0][:40] for c in CASES])
def test_split_prefix(line: str, want: dict[str, Any], body: str) -> None:
    prefix, got_body = split_prefix(line)
    fields = prefix._asdict()
    for key, value in want.items():
        assert fields[key] == value, (key, fields)
    assert got_body == body


@pytest.mark.parametrize(
    "line",
    [
        "Speculative metrics: Draft acceptance rate: 1.000",  # L4
        "Memory profiling results: total_gpu_memory=23.58GiB",  # L49
        "vllm.engine.async_llm_engine.AsyncEngineDeadError: Task finished unexpectedly.",  # L30
        "Maximum concurrency for 29000 tokens per request: 0.82x",  # L50
        "INFORMATION is not a level",
        "",
    ],
)
def test_lines_without_prefix_come_back_whole(line: str) -> None:
    prefix, body = split_prefix(line)
    assert prefix == EMPTY_PREFIX
    assert body == line


def test_trailing_newline_is_dropped() -> None:
    prefix, body = split_prefix("INFO 01-01 00:00:00 [a.py:1] hello\r\n")
    assert (prefix.level, body) == ("INFO", "hello")


def test_line_prefix_is_immutable_without_a_dict() -> None:
    prefix, _ = split_prefix("(APIServer pid=1) INFO 01-01 00:00:00 [a.py:1] m")
    assert not hasattr(prefix, "__dict__")
    with pytest.raises(AttributeError):
        prefix.level = "ERROR"  # type: ignore[misc]


def test_repeated_prefixes_are_shared_and_equal() -> None:
    first, _ = split_prefix("(APIServer pid=1) INFO 01-01 00:00:00 [a.py:1] one")
    second, _ = split_prefix("(APIServer pid=1) INFO 01-01 00:00:00 [a.py:1] two")
    assert first == second
    assert first == LinePrefix(
        proc="APIServer", pid=1, level="INFO", ts="01-01 00:00:00", header="vllm"
    )


def test_to_dict_keys() -> None:
    prefix, _ = split_prefix("[04:40:55] x")
    assert prefix.to_dict() == {
        "wrapper": None,
        "proc": None,
        "pid": None,
        "level": None,
        "ts": "04:40:55",
        "tp_rank": None,
        "header": "sglang",
    }
    docker, _ = split_prefix("2026-05-12T08:01:39Z hi")
    assert docker.to_dict()["wrapper_ts"] == "2026-05-12T08:01:39Z"
