"""The ``inferwatch`` command (DESIGN.md §4 'CLI')."""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from inferwatch import __version__
from inferwatch.errors import ConfigError

if TYPE_CHECKING:
    import datetime

    from inferwatch.config.models import Config
    from inferwatch.export.apiclient import ApiTarget

# Heavy modules (pydantic config models, asyncio, structlog) are imported by the commands that
# need them: `replay` starts its file scan before any of them load.


def load_config(path: str | None) -> Config:
    from inferwatch.configfile import load_config as load

    return load(path)


def configure_logging(level: str) -> None:
    from inferwatch.logsetup import configure_logging as configure

    configure(level)


Command = Callable[[argparse.Namespace], int]
DEFAULT_CONFIG = "/etc/inferwatch/config.yaml"
DEFAULT_CONFIG_ENV = "INFERWATCH_DEFAULT_CONFIG"
"""Where the default config file is looked for (tests point it elsewhere; not a second config)."""
LOG_LEVELS = ["debug", "info", "warning", "error"]


def default_config() -> str | None:
    """The config used when no ``--config`` is given: /etc/inferwatch/config.yaml (or the file
    ``$INFERWATCH_DEFAULT_CONFIG`` names) when it exists, else None (the embedded defaults)."""
    path = os.environ.get(DEFAULT_CONFIG_ENV) or DEFAULT_CONFIG
    return path if Path(path).is_file() else None


def _listen(value: str) -> str:
    from inferwatch.config.types import parse_listen

    try:
        return parse_listen(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_run(args: argparse.Namespace) -> int:
    from inferwatch.runtime import heap

    heap.hold()  # until the started daemon settles its heap (Daemon(settle_heap=True))
    from inferwatch.app import Daemon
    from inferwatch.configfile import load_with_web
    from inferwatch.runtime.runner import run_bounded
    from inferwatch.statedir import StateDirInUse, lock_state_dir, resolve_state_dir

    configure_logging(args.log_level)
    try:
        config = load_with_web(args.config, args.web_config_file)
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
        web_config_path=Path(args.web_config_file) if args.web_config_file else None,
        listen=args.listen,
        settle_heap=True,
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
    from inferwatch.configfile import load_with_web

    try:
        load_with_web(args.config, args.web_config_file)
    except ConfigError as exc:
        for problem in exc.problems:
            print(problem)
        return 2
    where = " and ".join(x for x in (args.config, args.web_config_file) if x)
    where = where or "embedded defaults"
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
    with _BatchGc() as collector:
        return _cmd_replay(args, collector)


def _cmd_replay(args: argparse.Namespace, collector: _BatchGc) -> int:
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
        return _replay(args, tz, year, collector)
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


def _replay(args: argparse.Namespace, tz: datetime.tzinfo, year: int, collector: _BatchGc) -> int:
    from inferwatch.replay.output import Writer
    from inferwatch.replay.recorder import RecordingWriter
    from inferwatch.replay.runner import Replay, ReplayInputs, TimeBaseError
    from inferwatch.replay.settings import ReplaySettings
    from inferwatch.replay.timeline import TimeContext
    from inferwatch.rules.loader import load_rule_files
    from inferwatch.rules.rule_paths import expand_rule_paths
    from inferwatch.runtime.scheduler import run_virtual

    settings = ReplaySettings.defaults()
    language = "en"
    if args.config is not None:
        try:
            config = load_config(args.config)
        except ConfigError as exc:
            print(exc, file=sys.stderr)
            return 2
        settings, language = ReplaySettings.of(config), config.language
    rule_files = list(settings.rule_files)
    paths, problems = expand_rule_paths([] if args.no_rules else args.rules or rule_files)
    rule_set, found = load_rule_files(paths)
    problems += found
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 2
    writer = (RecordingWriter if args.report else Writer)(sys.stdout, args.format, tz)
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
        keep_unread=args.report is not None,  # the report draws the engines' curves
    )
    try:
        collector.loaded()
        run_virtual(replay.run())
    except TimeBaseError as exc:
        print(f"replay: {exc}", file=sys.stderr)
        return 2
    doc, text = replay.summary()
    writer.summary(doc, text)
    if args.report and isinstance(writer, RecordingWriter):
        return _write_report(args, replay, writer, doc, language)
    return 0


def _write_report(
    args: argparse.Namespace, replay: Any, writer: Any, summary: dict[str, Any], language: str
) -> int:
    """``--report F.html``: the replay's views in one self-contained file."""
    from inferwatch.export.page.collect import curves_between, engine_span
    from inferwatch.export.page.report import ReportInputs, render_report

    first, last = replay.result.first, replay.result.last
    span = engine_span(replay.store)
    curves = [] if span is None else curves_between(replay.store, *span)
    page = render_report(
        ReportInputs(
            title=f"inferwatch replay · {Path(args.report).stem}",
            files=[*args.kernel, *args.engine_log],
            language=language,
            first=first,
            last=last,
            events=writer.events,
            alerts=writer.alerts,
            summary=summary,
            curves=curves,
            boot_relative=replay.result.time_base != "wall",
        )
    )
    try:
        Path(args.report).write_text(page, encoding="utf-8")
    except OSError as exc:
        print(f"replay: --report {args.report}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0


class _BatchGc:
    """The collector through a batch run (replay): held while it loads (its modules and rules
    make ~100,000 objects kept for the whole run and nearly no garbage; the collections among
    them cost ~13 ms of a replay's start), then, once :meth:`loaded`, never walking what was
    loaded and collecting young objects less often among the millions of short-lived ones.
    Everything is as before when the run ends."""

    def __enter__(self) -> _BatchGc:
        self._enabled, self._threshold = gc.isenabled(), gc.get_threshold()
        self._frozen = False
        gc.disable()
        return self

    def loaded(self) -> None:
        gc.freeze()
        self._frozen = True
        gc.set_threshold(20_000, *self._threshold[1:])
        if self._enabled:
            gc.enable()

    def __exit__(self, *_exc: object) -> None:
        gc.set_threshold(*self._threshold)
        if self._frozen:
            gc.unfreeze()
        if self._enabled:
            gc.enable()
        else:
            gc.disable()


def cmd_version(_args: argparse.Namespace) -> int:
    print(f"inferwatch {__version__}")
    return 0


def _api_target(args: argparse.Namespace) -> ApiTarget | None:
    """Where the daemon's API is and the credentials for it: ``--url`` (or $INFERWATCH_URL),
    else ``--listen``, else the config's ``listen``; None (after saying why) when the config or
    the ``--http.config.file`` is bad."""
    from inferwatch.export.apiclient import api_target
    from inferwatch.export.client import base_url

    try:
        listen = args.listen or load_config(args.config).listen
        return api_target(base_url(listen).removeprefix("http://"), args.url, args.http_config_file)
    except ConfigError as exc:
        print(f"cannot reach the daemon: the config has problems (or give --listen/--url):\n{exc}",
              file=sys.stderr)  # fmt: skip
        return None
    except OSError as exc:  # a credential file named in it cannot be read
        print(f"cannot read a credential file: {exc}", file=sys.stderr)
        return None


def _unauthorized(status: int) -> str:
    return (
        "the daemon asks for credentials: give --http.config.file (basic_auth) or set "
        "$INFERWATCH_HTTP_CONFIG_FILE"
        if status == 401
        else "the daemon refused these credentials"
    )


def cmd_status(args: argparse.Namespace) -> int:
    import time

    from inferwatch.export.client import DaemonError, get_json
    from inferwatch.export.status_text import status_lines

    target = _api_target(args)
    if target is None:
        return 2
    try:
        status = get_json(target, "/api/v1/status")
        if args.json:
            print(json.dumps(status, indent=2))
            return 0
        alerts = get_json(target, "/api/v1/alerts")
    except DaemonError as exc:
        print(exc, file=sys.stderr)
        return 1
    print("\n".join(status_lines(status, alerts, time.time())))
    return 0


def cmd_events(args: argparse.Namespace) -> int:
    """``events``: the daemon's event log, newest first."""
    from inferwatch.export.client import DaemonError, get_json
    from inferwatch.export.status_text import event_line

    target = _api_target(args)
    if target is None:
        return 2
    params = {"since": args.since, "limit": str(args.limit)}
    if args.until:
        params["until"] = args.until
    if args.type:
        params["type"] = ",".join(t for item in args.type for t in item.split(",") if t)
    try:
        rows = get_json(target, "/api/v1/events", params)["events"]
    except (DaemonError, KeyError, TypeError) as exc:
        print(f"events: {exc}", file=sys.stderr)
        return 1
    for row in rows:
        print(json.dumps(row, ensure_ascii=False) if args.json else event_line(row))
    if not rows and not args.json:
        print(f"no events since {args.since}", file=sys.stderr)
    return 0


def cmd_digest(args: argparse.Namespace) -> int:
    """``digest --preview NAME``: the running daemon renders a digest for the window ending now."""
    from urllib.parse import quote

    from inferwatch.export.client import DaemonError, get_json

    target = _api_target(args)
    if target is None:
        return 2
    try:
        doc = get_json(target, f"/api/v1/digests/{quote(args.preview, safe='')}/preview")
    except DaemonError as exc:
        print(f"digest: {exc}", file=sys.stderr)
        return 1
    print(doc.get("text", ""))
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


def cmd_nvml_snapshot(args: argparse.Namespace) -> int:
    """This host's NVML answers, as a profile for ``gpus.backend: fake``; exit 1 without NVML."""
    from inferwatch.errors import NoData
    from inferwatch.sources.nvml_snapshot import snapshot, write_profile

    try:
        doc = snapshot()
    except NoData as exc:
        print(f"nvml-snapshot: {exc}", file=sys.stderr)
        return 1
    output = Path(args.output) if args.output else None
    text = write_profile(doc, output)
    if output is None:
        sys.stdout.write(text)
    else:
        print(f"wrote {len(doc['gpus'])} GPU(s) to {output}", file=sys.stderr)
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

    target = _api_target(args)
    if target is None:
        return 2
    url = f"{target.base}/api/v1/silences"
    json_type = {"Content-Type": "application/json"}  # the daemon refuses other writes (415)
    ext = target.extensions()
    try:
        with target.client() as client:
            if args.action == "add":
                author = args.author or os.environ.get("USER") or getpass.getuser()
                body = request_body(args.matcher, args.duration, args.comment, author, time.time())
                response = client.post(url, json=body, extensions=ext)
            elif args.action == "list":
                response = client.get(url, extensions=ext)
            else:
                where = f"{url}/{quote(args.id, safe='')}"
                response = client.delete(where, headers=json_type, extensions=ext)
    except ValueError as exc:  # a bad matcher or duration, found before anything was sent
        print(f"silence {args.action}: {exc}", file=sys.stderr)
        return 2
    except (httpx.HTTPError, OSError) as exc:
        print(f"cannot reach inferwatch at {target.base}: {exc}", file=sys.stderr)
        return 1
    if response.status_code in (401, 403):
        print(f"silence {args.action}: {_unauthorized(response.status_code)}", file=sys.stderr)
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


def cmd_install_service(args: argparse.Namespace) -> int:
    from inferwatch.install.service import Target, install

    target = Target.of(user=args.user, unit_dir=args.unit_dir, config=args.config)
    return install(
        target, sys.stdout, sys.stderr, systemctl=not args.no_systemctl, dry_run=args.dry_run
    )


def cmd_uninstall_service(args: argparse.Namespace) -> int:
    from inferwatch.install.service import Target, uninstall

    target = Target.of(user=args.user, unit_dir=args.unit_dir, config=None)
    return uninstall(target, sys.stdout, sys.stderr, systemctl=not args.no_systemctl)


def _service_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--user", action="store_true", help="a unit for your own service manager (systemctl --user)"
    )
    p.add_argument(
        "--unit-dir",
        metavar="D",
        help="where the unit file goes (default /etc/systemd/system; --user: "
        "~/.config/systemd/user)",
    )
    p.add_argument("--no-systemctl", action="store_true", help="run no systemctl command")


def _replay_arguments(replay: argparse.ArgumentParser) -> None:
    replay.add_argument(
        "--config", help="config for engine names, thresholds, external labels and rule files"
    )
    replay.add_argument(
        "--rules", nargs="*", default=[], metavar="PATH", help="rule files (default: the config's)"
    )
    replay.add_argument(
        "--kernel", nargs="*", default=[], metavar="F", help="kernel logs (dmesg, journalctl, …)"
    )
    replay.add_argument(
        "--engine-log",
        nargs="*",
        default=[],
        metavar="F",
        help="engine logs (vLLM, SGLang, llama.cpp); matched to configured engines by path",
    )
    replay.add_argument(
        "--format", choices=["text", "jsonl"], default="text", help="output (default: text)"
    )
    replay.add_argument("--year", type=int, help="year of lines without one (default: this year)")
    replay.add_argument("--tz", default="UTC", help="zone of naive times (default: UTC)")
    replay.add_argument(
        "--eval-step",
        type=float,
        default=10.0,
        metavar="S",
        help="evaluate rules every S seconds of log time, and on every event (default: 10)",
    )
    replay.add_argument(
        "--boot-time",
        metavar="T",
        help="when the host booted (ISO 8601 or Unix seconds): places kernel seconds on the "
        "wall clock; without it a log with kernel seconds only is replayed boot-relative",
    )
    replay.add_argument(
        "--no-rules", action="store_true", help="events and summary only; evaluate no rules"
    )
    replay.add_argument(
        "--report",
        metavar="F.html",
        help="also write the replay's views (decode, MAL and step rate over time with busy "
        "periods, verdict, alerts, incidents, events) to one self-contained HTML file",
    )


def _web_config_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--web.config.file",
        dest="web_config_file",
        metavar="F",
        help="TLS and basic auth for the HTTP server, in exporter-toolkit's web-config format "
        "(instead of the config's web: section)",
    )


CONFIG_HELP = f"YAML config file (default: {DEFAULT_CONFIG} if it exists, else built-in defaults)"
LOG_HELP = "log level (default: info)"


def _client_arguments(parser: argparse.ArgumentParser) -> None:
    """How a command that talks to the running daemon finds it and authenticates to it."""
    parser.add_argument(
        "--listen", type=_listen, help="the daemon's HOST:PORT (default: the config's listen)"
    )
    parser.add_argument("--config", help=f"{CONFIG_HELP}; read for its listen address")
    parser.add_argument(
        "--url",
        help="the daemon's base URL, e.g. https://host:9945 (default: $INFERWATCH_URL, "
        "else http:// and --listen)",
    )
    parser.add_argument(
        "--http.config.file",
        dest="http_config_file",
        metavar="F",
        help="credentials and TLS trust in amtool's --http.config.file format (basic_auth, "
        "authorization, tls_config; default: $INFERWATCH_HTTP_CONFIG_FILE)",
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
    run.add_argument("--config", help=CONFIG_HELP)
    run.add_argument("--listen", type=_listen, help="HOST:PORT for /metrics and the API")
    run.add_argument("--state-dir", help="directory for snapshots and the event log")
    _web_config_argument(run)
    run.add_argument("--log-level", default="info", choices=LOG_LEVELS, help=LOG_HELP)

    demo = add("demo", cmd_demo, "Run the daemon on a simulated host (two GPUs, one engine).")
    demo.add_argument(
        "--listen", type=_listen, default="127.0.0.1:9945", help="HOST:PORT (default: %(default)s)"
    )
    demo.add_argument("--duration", type=float, default=None, help="stop after S seconds")
    demo.add_argument("--log-level", default="info", choices=LOG_LEVELS, help=LOG_HELP)

    check = add("check", cmd_check, "Validate a config (and rule files); exit 2 on problems.")
    check.add_argument("--config", help=CONFIG_HELP)
    check.add_argument("--rules", nargs="*", default=[], metavar="PATH", help="rule files")
    _web_config_argument(check)

    replay = add("replay", cmd_replay, "Run parsers, correlators and rules over recorded logs.")
    replay.set_defaults(batch=True)
    _replay_arguments(replay)

    tr = add("test-rules", cmd_test_rules, "Run promtool-format rule unit tests.")
    tr.add_argument("files", nargs="+", metavar="FILE", help="promtool rule-test files")

    export = add("export", cmd_export, "Export artefacts for other tools.")
    export.add_argument(
        "what", choices=["prometheus-rules"], help="prometheus-rules: the shipped rules"
    )
    export.add_argument("--output", metavar="F", help="write to F instead of stdout")

    snap = add(
        "nvml-snapshot",
        cmd_nvml_snapshot,
        "Write this host's NVML answers as a fake-GPU profile (JSON).",
    )
    snap.add_argument("--output", metavar="F", help="write to F instead of stdout")

    nt = add("notify-test", cmd_notify_test, "Send a test notification through a receiver.")
    nt.add_argument("--receiver", required=True, help="the receiver's name in the config")
    nt.add_argument("--config", help=CONFIG_HELP)

    _client_commands(add)
    _service_commands(add)
    add("version", cmd_version, "Print the version.")
    return parser


AddCommand = Callable[[str, Command, str], argparse.ArgumentParser]


def _client_commands(add: AddCommand) -> None:
    """The commands that talk to a running daemon (found by ``--listen`` or the config)."""
    silence = add("silence", cmd_silence, "Manage a running daemon's silences.")
    actions = silence.add_subparsers(dest="action", required=True, metavar="ACTION")
    s_add = actions.add_parser("add", help="mute the alerts the matchers select")
    s_add.add_argument("--matcher", action="append", required=True, help='e.g. alertname="X"')
    s_add.add_argument(
        "--duration", default="1h", help="how long, e.g. 2h or 1h30m (default: 1h, as amtool)"
    )
    s_add.add_argument("--comment", required=True, help="why (required)")
    s_add.add_argument("--author", help="who (default: your user name)")
    actions.add_parser("list", help="all silences, expired ones included")
    s_exp = actions.add_parser("expire", help="end a silence now")
    s_exp.add_argument("id", metavar="ID", help="the id `silence add` printed")
    for action in actions.choices.values():
        _client_arguments(action)

    status = add("status", cmd_status, "Show a running daemon's status.")
    _client_arguments(status)
    status.add_argument("--json", action="store_true", help="print the raw /api/v1/status JSON")

    events = add("events", cmd_events, "Show a running daemon's event log, newest first.")
    _client_arguments(events)
    events.add_argument(
        "--since",
        default="1h",
        help="a duration back from now (10m), RFC 3339 or Unix seconds (default: 1h)",
    )
    events.add_argument("--until", help="the same forms as --since (default: now)")
    events.add_argument(
        "--type", action="append", metavar="TYPE", help="only these types (repeat or a,b)"
    )
    events.add_argument("--limit", type=int, default=100, help="at most N (default: 100)")
    events.add_argument("--json", action="store_true", help="one JSON object a line")

    digest = add("digest", cmd_digest, "Preview a configured digest (the window ending now).")
    _client_arguments(digest)
    digest.add_argument(
        "--preview", required=True, metavar="NAME", help="the digest's name in the config"
    )


def _service_commands(add: Callable[[str, Command, str], argparse.ArgumentParser]) -> None:
    inst = add(
        "install-service",
        cmd_install_service,
        "Install the systemd unit for this inferwatch, and the example config if none exists.",
    )
    _service_arguments(inst)
    inst.add_argument(
        "--config",
        metavar="F",
        help="the config the service runs (default /etc/inferwatch/config.yaml; --user: "
        "~/.config/inferwatch/config.yaml); the example is copied there when it does not exist",
    )
    inst.add_argument("--dry-run", action="store_true", help="print the unit; change nothing")
    uninst = add(
        "uninstall-service",
        cmd_uninstall_service,
        "Stop and remove the systemd unit (the config and state stay).",
    )
    _service_arguments(uninst)


def main(argv: Sequence[str] | None = None) -> int:
    return dispatch(build_parser().parse_args(argv))


def console() -> NoReturn:
    """The ``inferwatch`` command. After a batch command (``replay``) the process ends without
    tearing the interpreter down: the output is flushed and the scan workers are gone, and
    freeing a replay's objects one by one would add ~0.1 s to every run for nothing."""
    args = build_parser().parse_args()
    code = dispatch(args)
    if getattr(args, "batch", False):
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            code = 141
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def dispatch(args: argparse.Namespace) -> int:
    if getattr(args, "config", "") is None:
        args.config = default_config()
    func: Command = args.func
    try:
        return func(args)
    except BrokenPipeError:
        # the reader went away (`inferwatch replay ... | head`): stop quietly, as Unix tools do,
        # and keep the interpreter's final flush from raising again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
