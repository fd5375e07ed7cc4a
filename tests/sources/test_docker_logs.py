"""The docker logs source, driven by a fake ``docker`` executable.

The fake is a small Python script written into tmp_path for each test, with its settings in a
JSON file beside it. It serves a copy of tests/fixtures/docker/vllm.log the way ``docker logs
--timestamps`` does: access-log lines on stdout, the rest (vLLM logs to stderr) on stderr; it
honours ``--since`` (inclusive, as docker is) and ``--tail``, follows appended lines with
``--follow``, answers "No such container" for any other container, and logs each invocation
(pid and arguments). Control lines in the copy: ``#EXIT`` ends the process with 0 the first
time it is reached (a container that stopped), ``#FAIL rc text`` prints ``text`` on stderr and
exits with ``rc``. Tests wait on conditions with timeouts, never sleep.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from conftest import REPO, wait_until
from inferwatch.clock import FakeClock
from inferwatch.config.models import EngineConfig
from inferwatch.configfile import parse_config
from inferwatch.derive.engine.names import DECODE, MAL
from inferwatch.errors import NoData
from inferwatch.event import Event
from inferwatch.model import Record
from inferwatch.pipeline.engine import EngineIngest
from inferwatch.pipeline.registry import BuildContext, build_engines
from inferwatch.runtime.blocking import BlockingPool
from inferwatch.sources.docker_logs import (
    DockerLogsFailed,
    DockerLogsSource,
    DockerRecord,
    digest,
    stamp_ns,
)
from inferwatch.store.events import EventLog
from inferwatch.store.tsdb import SeriesStore
from sources.run_source import collect

FIXTURE = REPO / "tests/fixtures/docker/vllm.log"
CONTAINER = "vllm-flash"

FAKE = r'''
"""Fake docker: `docker logs` over a file of `docker logs --timestamps` output."""
import json, os, re, sys, time
from datetime import datetime, timezone

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "fake.json")) as f:
    cfg = json.load(f)
args = sys.argv[1:]
with open(cfg["log"], "a") as log:
    log.write(json.dumps({"pid": os.getpid(), "args": args}) + "\n")
if args[:1] != ["logs"] or args[-1] != cfg["container"]:
    sys.stderr.write("Error response from daemon: No such container: %s\n" % args[-1])
    sys.exit(1)


def ns(stamp):
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z", stamp)
    base = datetime.strptime(m[1], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    return int(base.timestamp()) * 10**9 + int((m[2] or "").ljust(9, "0"))


opt = lambda name: args[args.index(name) + 1] if name in args else None
since, tail = opt("--since"), opt("--tail")
with open(cfg["fixture"]) as f:
    lines = [l for l in f.read().splitlines() if l and not l.startswith("#")]
skip = max(0, len(lines) - int(tail)) if tail is not None else 0
fired = json.load(open(cfg["state"])) if os.path.exists(cfg["state"]) else []
with open(cfg["fixture"]) as f:
    index = -1
    while True:
        line = f.readline()
        if not line:
            if "--follow" not in args:
                break
            time.sleep(0.02)
            continue
        index += 1
        if line.startswith("#EXIT") and index not in fired:
            json.dump(fired + [index], open(cfg["state"], "w"))
            sys.exit(0)
        if line.startswith("#FAIL"):
            _, code, text = line.split(" ", 2)
            sys.stderr.write(text)
            sys.exit(int(code))
        if line.startswith("#") or not line.strip():
            continue
        if skip:
            skip -= 1
            continue
        if since is not None and ns(line.split(" ", 1)[0]) < ns(since):
            continue
        out = sys.stdout if ' - "' in line else sys.stderr
        out.write(line)
        out.flush()
'''


class Fake:
    """A fake docker over a private copy of the fixture."""

    def __init__(self, tmp_path: Path, fixture_text: str | None = None) -> None:
        self.fixture = tmp_path / "container.log"
        self.fixture.write_text(fixture_text if fixture_text is not None else FIXTURE.read_text())
        self.log = tmp_path / "invocations.jsonl"
        self.path = tmp_path / "docker"
        self.path.write_text(f"#!{sys.executable}\n{FAKE}")
        self.path.chmod(0o755)
        settings = {"fixture": str(self.fixture), "log": str(self.log), "container": CONTAINER}
        settings["state"] = str(tmp_path / "fired.json")
        (tmp_path / "fake.json").write_text(json.dumps(settings))

    def source(self, checkpoint: Any = None, container: str = CONTAINER) -> DockerLogsSource:
        return DockerLogsSource(
            container,
            FakeClock(),
            name="engine:flash:docker",
            docker=str(self.path),
            checkpoint=checkpoint,
            restart_delay=0.01,
        )

    def invocations(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line)["args"] for line in self.log.read_text().splitlines()]


def fixture_lines() -> list[tuple[str, str]]:
    """(docker time, container line) of each fixture line."""
    parts = (line.partition(" ") for line in FIXTURE.read_text().splitlines())
    return [(stamp, text) for stamp, _, text in parts]


def seconds(stamp: str) -> float:
    ns = stamp_ns(stamp)
    assert ns is not None
    return ns / 1e9


def records(got: list[Record]) -> list[DockerRecord]:
    return [r for r in got if isinstance(r, DockerRecord)]


def count(n: int) -> Callable[[list[Record]], bool]:
    return lambda got: len(records(got)) >= n


# --- docker's time --------------------------------------------------------------------------


def test_stamp_ns_reads_rfc3339_nano_as_docker_prints_it() -> None:
    base = 1_778_256_115 * 1_000_000_000  # 2026-05-08T16:01:55Z
    assert stamp_ns("2026-05-08T16:01:55.117304212Z") == base + 117_304_212
    assert stamp_ns("2026-05-08T16:01:55.11739Z") == base + 117_390_000  # zeros trimmed
    assert stamp_ns("2026-05-08T16:01:55Z") == base
    assert stamp_ns("2026-05-08T18:01:55.5+02:00") == base + 500_000_000
    assert stamp_ns("(APIServer") is None
    assert stamp_ns("2026-02-30T00:00:00Z") is None


# --- the source -----------------------------------------------------------------------------


def test_reads_both_streams_strips_docker_time_and_keeps_it(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    got = records(asyncio.run(collect(fake.source(), count(5))))
    assert [(r.stamp, r.text) for r in got] == fixture_lines()
    assert got[2].text.startswith("INFO:     127.0.0.1")  # the one line docker sent on stdout
    assert got[0].wall_time == seconds(fixture_lines()[0][0])
    assert got[0].read_at == FakeClock().time()
    assert {r.source for r in got} == {"engine:flash:docker"}
    assert [r.line_no for r in got] == [1, 2, 3, 4, 5]
    args = fake.invocations()[0]
    assert args == ["logs", "--follow", "--timestamps", "--tail", "1000", CONTAINER]


LOS_ANGELES = ZoneInfo("America/Los_Angeles")


def test_lines_reach_the_engine_stats(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    got = records(asyncio.run(collect(fake.source(), count(5))))
    clock = FakeClock(seconds("2026-05-12T08:02:00Z"))
    store = SeriesStore(clock)
    events: list[Event] = []

    async def sink(batch: list[Event]) -> None:
        events.extend(batch)

    async def feed() -> None:
        # the host's zone differs from the container's: docker's UTC stamp must win
        ingest = EngineIngest(EngineConfig(name="flash"), store, sink, clock, LOS_ANGELES)
        for rec in got:
            await ingest.on_log_line(rec)
        await ingest.tick()

    asyncio.run(feed())
    decode = {s.labels: s.last() for s in store.family(DECODE)}
    assert decode, "no decode rate from the container's stats lines"
    assert any(("engine", "flash") in labels for labels in decode)
    mal = [s.last() for s in store.family(MAL)]
    assert mal and mal[0] is not None and mal[0][1] == pytest.approx(2.2)
    stamps = {round(r.wall_time, 3) for r in got}
    for series in store.family(DECODE):
        point = series.last()
        assert point is not None and round(point[0], 3) in stamps


def test_checkpoint_resumes_with_since_without_repeating(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    source = fake.source()
    assert source.checkpoint() is None
    got = records(asyncio.run(collect(source, count(3), ack=False)))
    for index in (0, 2, 1):  # a late ack never moves the checkpoint back
        ack = got[index].ack
        assert ack is not None
        ack()
    stamp, text = fixture_lines()[2]
    assert source.checkpoint() == {"since": stamp, "seen": [digest(text)]}

    resumed = fake.source(checkpoint=source.checkpoint())
    more = records(asyncio.run(collect(resumed, count(2))))
    assert [(r.stamp, r.text) for r in more] == fixture_lines()[3:]
    assert fake.invocations()[-1][-3:] == ["--since", stamp, CONTAINER]


def test_container_restart_follows_on_from_the_position(tmp_path: Path) -> None:
    """Docker times can repeat: a line at the resume time is new unless its content was read."""
    lines = FIXTURE.read_text().splitlines()
    same = lines[0].split(" ", 1)[0] + " " + lines[1].split(" ", 1)[1]  # 2nd line, 1st's time
    text = "\n".join([lines[0], "#EXIT", same, *lines[2:]]) + "\n"
    fake = Fake(tmp_path, text)
    source = fake.source()
    got = records(asyncio.run(collect(source, count(5))))
    assert [r.text for r in got] == [t for _, t in fixture_lines()]
    assert got[1].stamp == got[0].stamp
    runs = fake.invocations()
    assert len(runs) == 2 and source.restarts == 1
    assert runs[1][-3:] == ["--since", fixture_lines()[0][0], CONTAINER]
    last_stamp, last_text = fixture_lines()[-1]
    assert source.checkpoint() == {"since": last_stamp, "seen": [digest(last_text)]}


def test_follows_lines_appended_later(tmp_path: Path) -> None:
    lines = FIXTURE.read_text().splitlines()
    fake = Fake(tmp_path, "\n".join(lines[:-1]) + "\n")

    def append_last(got: list[Record]) -> bool:
        if len(records(got)) == 4:
            with fake.fixture.open("a") as f:
                f.write(lines[-1] + "\n")
        return len(records(got)) >= 5

    got = records(asyncio.run(collect(fake.source(), append_last)))
    assert got[-1].text == fixture_lines()[-1][1]


def test_cancel_kills_docker(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    asyncio.run(collect(fake.source(), count(1)))
    pid = int(json.loads(fake.log.read_text().splitlines()[0])["pid"])

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    wait_until(gone, timeout=10, what="the fake docker to be killed")


def test_docker_not_installed_is_no_data(tmp_path: Path) -> None:
    missing = DockerLogsSource(CONTAINER, FakeClock(), docker=str(tmp_path / "nope"))
    with pytest.raises(NoData, match="docker not installed"):
        asyncio.run(collect(missing, count(1)))
    assert missing.name == f"docker:{CONTAINER}"


def test_no_such_container_is_no_data(tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    with pytest.raises(NoData, match="No such container: gone"):
        asyncio.run(collect(fake.source(container="gone"), count(1)))


def test_unreachable_daemon_is_no_data(tmp_path: Path) -> None:
    text = (
        "#FAIL 1 Cannot connect to the Docker daemon at unix:///var/run/docker.sock."
        " Is the docker daemon running?\n"
    )
    with pytest.raises(NoData, match="Cannot connect to the Docker daemon"):
        asyncio.run(collect(Fake(tmp_path, text).source(), count(1)))


def test_other_failures_are_errors(tmp_path: Path) -> None:
    text = "#FAIL 125 unknown flag: --since\n"
    with pytest.raises(DockerLogsFailed, match="exited 125: unknown flag"):
        asyncio.run(collect(Fake(tmp_path, text).source(), count(1)))


def test_unusable_checkpoint_starts_from_the_tail() -> None:
    for checkpoint in (None, "x", {"since": "yesterday"}, {"since": 5}):
        source = DockerLogsSource(CONTAINER, FakeClock(), checkpoint=checkpoint)
        assert source.command()[-3:] == ["--tail", "1000", CONTAINER]
        assert source.checkpoint() is None


def test_registry_adds_a_docker_source_per_engine_with_a_container(tmp_path: Path) -> None:
    config = parse_config(
        f"engines:\n  - {{name: flash, container: {CONTAINER}}}\n  - {{name: other}}\n", "t.yml"
    )
    clock = FakeClock()
    saved = {"since": fixture_lines()[0][0], "seen": []}

    async def sink(_events: list[Event]) -> None:
        return None

    pool, events = BlockingPool(workers=1), EventLog(tmp_path / "events.db")
    ctx = BuildContext(
        config, clock, pool, SeriesStore(clock), events, {"engine:flash:docker": saved}, sink
    )
    try:
        built = build_engines(ctx)
    finally:
        events.close()
        pool.shutdown()
    docker = [s for s in built.sources if isinstance(s, DockerLogsSource)]
    assert [(s.name, s.container) for s in docker] == [("engine:flash:docker", CONTAINER)]
    assert "engine:flash:docker" in built.line_handlers
    assert docker[0].checkpoint() == saved
