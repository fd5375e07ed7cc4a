"""``inferwatch notify-test`` against a real webhook receiver, and ``inferwatch silence`` against
the real daemon process: exit codes, what is printed, and silences.json surviving a restart."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from conftest import free_port
from inferwatch.cli import main
from integration.daemon_proc import DaemonProc, start_daemon


class Sink:
    """A webhook receiver on 127.0.0.1; ``/fail`` answers 503."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                sink.posts.append(json.loads(body))
                self.send_response(503 if self.path == "/fail" else 200)
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def sink() -> Iterator[Sink]:
    s = Sink()
    try:
        yield s
    finally:
        s.server.shutdown()
        s.server.server_close()


def write_config(tmp_path: Path, *paths: str, port: int) -> str:
    hooks = "".join(f"      - url: http://127.0.0.1:{port}{p}\n" for p in paths)
    path = tmp_path / "c.yaml"
    path.write_text(
        "route:\n  receiver: phone\nreceivers:\n"
        f"  - name: phone\n    webhook_configs:\n{hooks}"
        "  - name: team\n    console_configs: [{}]\n"
    )
    return str(path)


def test_notify_test_all_ok(tmp_path: Path, sink: Sink, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, "/hook", port=sink.port)
    assert main(["notify-test", "--receiver", "phone", "--config", config]) == 0
    assert capsys.readouterr().out == "phone/webhook: ok\n"
    (post,) = sink.posts
    assert post["alerts"][0]["labels"]["alertname"] == "InferwatchTest"
    assert post["alerts"][0]["labels"]["severity"] == "info"


def test_notify_test_one_failure_exits_1(
    tmp_path: Path, sink: Sink, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, "/hook", "/fail", port=sink.port)
    assert main(["notify-test", "--receiver", "phone", "--config", config]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "phone/webhook: ok"
    assert lines[1].startswith("phone/webhook/1: retry: ") and "503" in lines[1]


def test_notify_test_unknown_receiver_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, "/hook", port=1)
    assert main(["notify-test", "--receiver", "pager", "--config", config]) == 2
    err = capsys.readouterr().err
    assert "'pager'" in err and "phone, team" in err


def silence(d: DaemonProc, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["silence", *args, "--listen", f"127.0.0.1:{d.port}"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.integration
def test_silence_add_list_expire_through_the_daemon(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = start_daemon(tmp_path)
    try:
        d.wait_ready()
        code, out = silence(
            d, capsys, "add", "--matcher", 'alertname="GpuHot"', "--matcher", "gpu=~0|1",
            "--duration", "2h", "--comment", "fan swap", "--author", "owner",
        )  # fmt: skip
        assert code == 0, out
        sid = out.strip()
        saved = json.loads((d.state_dir / "silences.json").read_text())
        assert [s["id"] for s in saved["silences"]] == [sid]
        code, out = silence(d, capsys, "list")
        assert code == 0
        assert out.startswith(f"{sid}  active ")
        assert '{alertname="GpuHot",gpu=~"0|1"}  by owner: fan swap' in out
        # Alertmanager's rules hold on the server too: a blank comment is refused.
        code, out = silence(d, capsys, "add", "--matcher", "a=b", "--comment", " ")
        assert code == 1 and "comment is required" in out
        code, out = silence(d, capsys, "expire", sid)
        assert (code, out) == (0, f"expired {sid}\n")
        code, out = silence(d, capsys, "expire", "no-such-id")
        assert code == 1 and "no silence" in out
        assert d.terminate()[0] == 0
        # A restarted daemon loads the file NotifyService reads: the silence is still there.
        d = start_daemon(tmp_path, state_dir=d.state_dir)
        d.wait_ready()
        code, out = silence(d, capsys, "list")
        assert code == 0 and out.startswith(f"{sid}  expired ")
    finally:
        d.kill()


def test_silence_without_a_daemon_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["silence", "list", "--listen", f"127.0.0.1:{free_port()}"])
    assert code == 1
    assert "cannot reach inferwatch" in capsys.readouterr().err


def test_silence_add_rejects_a_bad_matcher_before_sending(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["silence", "add", "--matcher", "=x", "--comment", "c", "--listen", "127.0.0.1:1"]
    assert main(args) == 2
    assert "invalid matcher" in capsys.readouterr().err
