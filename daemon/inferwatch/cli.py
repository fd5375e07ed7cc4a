"""The ``inferwatch`` command (DESIGN.md §4 'CLI')."""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from inferwatch import __version__
from inferwatch.errors import ConfigError

if TYPE_CHECKING:
    import datetime

    from inferwatch.config.models import Config

# Heavy modules (pydantic config models, asyncio, structlog) are imported by the commands that
# need them: `replay` starts its file scan before any of them load.


def load_config(path: str | None) -> Config:
    from inferwatch.configfile import load_config as load

    return load(path)


def configure_logging(level: str) -> None:
    from inferwatch.logsetup import configure_logging as configure

    configure(level)


Command = Callable[[argparse.Namespace], int]


def _listen(value: str) -> str:
    from inferwatch.config.types import parse_listen

    try:
        return parse_listen(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_run(args: argparse.Namespace) -> int:
    from inferwatch.app import Daemon
    from inferwatch.runtime.runner import run_bounded
    from inferwatch.statedir import StateDirInUse, lock_state_dir, resolve_state_dir

    configure_logging(args.log_level)
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    state_dir = resolve_state_dir(args.state_dir, config.state_dir)
    try:
        lock = lock_state_dir(state_dir)
    except StateDirInUse as exc:
        print(exc, file=sys.stderr)
        return 1
    daemon = Daemon(
        config,
        state_dir,
        config_path=Path(args.config) if args.config else None,
        listen=args.listen,
    )
    try:
        return run_bounded(daemon.run())
    finally:
        lock.release()


def cmd_demo(args: argparse.Namespace) -> int:
    from inferwatch.demo import run_demo

    configure_logging(args.log_level)
    import asyncio

    code: int = asyncio.run(run_demo(listen=args.listen, duration=args.duration))
    return code


def cmd_check(args: argparse.Namespace) -> int:
    try:
        load_config(args.config)
    except ConfigError as exc:
        for problem in exc.problems:
            print(problem)
        return 2
    where = args.config or "embedded defaults"
    print(f"{where}: OK")
    return _check_rules(args.rules) if args.rules else 0


def _check_rules(patterns: list[str]) -> int:
    """``check --rules``: every rule file, one located line per problem; exit 2 on any."""
    from inferwatch.rules.loader import expand_rule_paths, load_rule_file

    paths, problems = expand_rule_paths(patterns)
    for path in paths:
        groups, found = load_rule_file(path)
        problems.extend(found)
        if not found:
            print(f"{path}: OK ({sum(len(g.rules) for g in groups)} rules)")
    for problem in problems:
        print(problem)
    return 2 if problems else 0


def cmd_replay(args: argparse.Namespace) -> int:
    import datetime
    import zoneinfo

    try:
        tz: datetime.tzinfo = zoneinfo.ZoneInfo(args.tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        print(f"replay: unknown time zone {args.tz!r}", file=sys.stderr)
        return 2
    if not args.kernel and not args.engine_log:
        print("replay: give at least one --kernel or --engine-log file", file=sys.stderr)
        return 2
    for name in [*args.kernel, *args.engine_log]:
        if not Path(name).is_file():
            print(f"replay: {name}: no such file", file=sys.stderr)
            return 2
    year = args.year or datetime.datetime.now(tz).year
    if args.boot_time is not None and _boot_time(args.boot_time, tz) is None:
        print(
            f"replay: --boot-time {args.boot_time!r}: not ISO 8601 or Unix seconds", file=sys.stderr
        )
        return 2
    from inferwatch.replay import engine_parts

    for name in args.engine_log:  # the scan runs while the rest of the replay loads
        engine_parts.start_scan(Path(name), year, tz, render=args.format == "jsonl")
    try:
        return _replay(args, tz, year)
    finally:
        engine_parts.stop_scans()


def _boot_time(text: str, tz: datetime.tzinfo) -> float | None:
    """``--boot-time``: Unix seconds, or ISO 8601 (naive: in ``--tz``); None if neither."""
    import datetime

    try:
        return float(text)
    except ValueError:
        pass
    try:
        when = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    return (when if when.tzinfo is not None else when.replace(tzinfo=tz)).timestamp()


def _replay(args: argparse.Namespace, tz: datetime.tzinfo, year: int) -> int:
    import asyncio

    from inferwatch.replay.output import Writer
    from inferwatch.replay.runner import Replay, ReplayInputs, TimeBaseError
    from inferwatch.replay.settings import ReplaySettings
    from inferwatch.replay.timeline import TimeContext
    from inferwatch.rules.loader import load_rule_files
    from inferwatch.rules.rule_paths import expand_rule_paths

    settings = ReplaySettings.defaults()
    if args.config is not None:
        try:
            settings = ReplaySettings.of(load_config(args.config))
        except ConfigError as exc:
            print(exc, file=sys.stderr)
            return 2
    rule_files = list(settings.rule_files)
    paths, problems = expand_rule_paths([] if args.no_rules else args.rules or rule_files)
    rule_set, found = load_rule_files(paths)
    problems += found
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 2
    writer = Writer(sys.stdout, args.format, tz)
    replay = Replay(
        ReplayInputs(kernel=list(args.kernel), engine_logs=list(args.engine_log)),
        writer,
        TimeContext(
            year=year,
            tz=tz,
            boot_time=None if args.boot_time is None else _boot_time(args.boot_time, tz),
        ),
        eval_step=args.eval_step,
        correlation_window=settings.correlation_window,
        engine_names=settings.engine_names,
        rule_set=rule_set,
        external_labels=settings.external_labels,
        engine_thresholds=settings.engine_thresholds,
        limits=settings.limits,
        alert_limit=settings.alerts_per_rule,
    )
    try:
        with _batch_gc():
            asyncio.run(replay.run())
    except TimeBaseError as exc:
        print(f"replay: {exc}", file=sys.stderr)
        return 2
    doc, text = replay.summary()
    writer.summary(doc, text)
    return 0


@contextlib.contextmanager
def _batch_gc() -> Iterator[None]:
    """A batch run (replay) allocates millions of short-lived objects around what it loaded
    once: collect young objects less often, and never walk the loaded ones."""
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(20_000, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def cmd_version(_args: argparse.Namespace) -> int:
    print(f"inferwatch {__version__}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    import httpx

    url = f"http://{args.listen}/api/v1/status"
    try:
        response = httpx.get(url, timeout=5.0, trust_env=False)
        response.raise_for_status()
    except httpx.HTTPError as exc:
        print(f"cannot reach inferwatch at {url}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(response.json(), indent=2))
    return 0


def cmd_test_rules(args: argparse.Namespace) -> int:
    from inferwatch.promtool.runner import main as run_rule_tests

    return run_rule_tests(args.files)


def cmd_export(args: argparse.Namespace) -> int:
    from inferwatch.promtool.export import ExportError, export_prometheus_rules

    try:
        text = export_prometheus_rules()
    except ExportError as exc:
        print(f"inferwatch export: {exc}", file=sys.stderr)
        return 1
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def cmd_notify_test(args: argparse.Namespace) -> int:
    """Send one test alert through each of a receiver's integrations; exit 1 unless all ok."""
    from inferwatch.notify.testsend import UnknownReceiverError, send_test

    configure_logging("warning")  # channel logs go to stderr; the verdicts are stdout
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        import asyncio

        verdicts = asyncio.run(send_test(config, args.receiver))
    except UnknownReceiverError as exc:
        print(f"notify-test: {exc}", file=sys.stderr)
        return 2
    if not verdicts:
        print(f"notify-test: receiver {args.receiver!r} has no integrations", file=sys.stderr)
        return 1
    for verdict in verdicts:
        print(f"{args.receiver}/{verdict.integration}: {verdict.text()}")
    return 0 if all(v.ok for v in verdicts) else 1


def cmd_silence(args: argparse.Namespace) -> int:
    """``silence add|list|expire`` against a running daemon's /api/v1/silences."""
    import getpass
    import os
    import time
    from urllib.parse import quote

    import httpx

    from inferwatch.notify.silence_api import format_listing, request_body

    url = f"http://{args.listen}/api/v1/silences"
    json_type = {"Content-Type": "application/json"}  # the daemon refuses other writes (415)
    try:
        with httpx.Client(timeout=10.0, trust_env=False) as client:
            if args.action == "add":
                author = args.author or os.environ.get("USER") or getpass.getuser()
                body = request_body(args.matcher, args.duration, args.comment, author, time.time())
                response = client.post(url, json=body)
            elif args.action == "list":
                response = client.get(url)
            else:
                response = client.delete(f"{url}/{quote(args.id, safe='')}", headers=json_type)
    except ValueError as exc:  # a bad matcher or duration, found before anything was sent
        print(f"silence {args.action}: {exc}", file=sys.stderr)
        return 2
    except httpx.HTTPError as exc:
        print(f"cannot reach inferwatch at {args.listen}: {exc}", file=sys.stderr)
        return 1
    try:
        doc = response.json()
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        doc = {"error": response.text.strip()[:200]}
    if response.status_code >= 400:
        print(f"silence {args.action}: {doc.get('error', response.status_code)}", file=sys.stderr)
        return 1
    if args.action == "add":
        print(doc["silenceID"])
    elif args.action == "list":
        print("\n".join(format_listing(doc)) or "no silences")
    else:
        print(f"expired {doc['silenceID']}")
    return 0


def _replay_arguments(replay: argparse.ArgumentParser) -> None:
    replay.add_argument("--config")
    replay.add_argument("--rules", nargs="*", default=[], metavar="PATH")
    replay.add_argument("--kernel", nargs="*", default=[], metavar="F")
    replay.add_argument("--engine-log", nargs="*", default=[], metavar="F")
    replay.add_argument("--format", choices=["text", "jsonl"], default="text")
    replay.add_argument("--year", type=int)
    replay.add_argument("--tz", default="UTC")
    replay.add_argument("--eval-step", type=float, default=10.0)
    replay.add_argument(
        "--boot-time",
        metavar="T",
        help="when the host booted (ISO 8601 or Unix seconds): places kernel seconds on the "
        "wall clock; without it a log with kernel seconds only is replayed boot-relative",
    )
    replay.add_argument(
        "--no-rules", action="store_true", help="events and summary only; evaluate no rules"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="inferwatch",
        description="Watch a local LLM-inference GPU host and report what matters.",
    )
    parser.add_argument("--version", action="version", version=f"inferwatch {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, func: Command, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(func=func)
        return p

    run = add("run", cmd_run, "Run the daemon.")
    run.add_argument("--config", help="YAML config file (default: embedded defaults)")
    run.add_argument("--listen", type=_listen, help="HOST:PORT for /metrics and the API")
    run.add_argument("--state-dir", help="directory for snapshots and the event log")
    run.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])

    demo = add("demo", cmd_demo, "Run the daemon on a simulated host (two GPUs, one engine).")
    demo.add_argument("--listen", type=_listen, default="127.0.0.1:9945", help="HOST:PORT")
    demo.add_argument("--duration", type=float, default=None, help="stop after S seconds")
    demo.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])

    check = add("check", cmd_check, "Validate a config (and rule files); exit 2 on problems.")
    check.add_argument("--config", help="YAML config file")
    check.add_argument("--rules", nargs="*", default=[], metavar="PATH", help="rule files")

    replay = add("replay", cmd_replay, "Run parsers, correlators and rules over recorded logs.")
    _replay_arguments(replay)

    tr = add("test-rules", cmd_test_rules, "Run promtool-format rule unit tests.")
    tr.add_argument("files", nargs="+", metavar="FILE")

    export = add("export", cmd_export, "Export artefacts for other tools.")
    export.add_argument("what", choices=["prometheus-rules"])
    export.add_argument("--output", metavar="F", help="write to F instead of stdout")

    nt = add("notify-test", cmd_notify_test, "Send a test notification through a receiver.")
    nt.add_argument("--receiver", required=True)
    nt.add_argument("--config")

    silence = add("silence", cmd_silence, "Manage a running daemon's silences.")
    actions = silence.add_subparsers(dest="action", required=True, metavar="ACTION")
    s_add = actions.add_parser("add", help="mute the alerts the matchers select")
    s_add.add_argument("--matcher", action="append", required=True, help='e.g. alertname="X"')
    s_add.add_argument("--duration", default="1h", help="how long, e.g. 2h or 1h30m")
    s_add.add_argument("--comment", required=True, help="why (required)")
    s_add.add_argument("--author", help="who (default: your user name)")
    actions.add_parser("list", help="all silences, expired ones included")
    s_exp = actions.add_parser("expire", help="end a silence now")
    s_exp.add_argument("id", metavar="ID")
    for action in actions.choices.values():
        action.add_argument(
            "--listen", type=_listen, default="127.0.0.1:9945", help="the daemon's HOST:PORT"
        )

    status = add("status", cmd_status, "Show a running daemon's status.")
    status.add_argument("--listen", default="127.0.0.1:9945", help="the daemon's HOST:PORT")

    add("version", cmd_version, "Print the version.")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Command = args.func
    return func(args)


if __name__ == "__main__":
    sys.exit(main())
