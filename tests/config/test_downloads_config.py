"""``downloads:``: each entry names its downloader by exactly one of unit, user_unit, pid,
process_pattern; bad entries are located at PATH:LINE:COL by ``inferwatch check``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from config.test_loader import problems
from inferwatch.configfile import parse_config


def test_defaults_and_a_full_entry() -> None:
    cfg = parse_config(
        "downloads:\n"
        "  - {name: a, directory: /m/a, pid: 42}\n"
        "  - name: b\n"
        "    directory: /m/b\n"
        "    user_unit: nvfp4-download\n"
        "    expected_bytes: 135000000000\n"
        "    index_file: model.safetensors.index.json\n"
        "    expected_files: 30\n"
        "    log: /m/b.log\n"
        "    interval: 5s\n"
        "    stall_after: 30m\n",
        "c.yaml",
    )
    a, b = cfg.downloads
    assert (a.interval, a.stall_after, a.downloader()) == (2.0, 600.0, ("pid", "42"))
    assert b.downloader() == ("user_unit", "nvfp4-download")
    assert (b.interval, b.stall_after, b.expected_files) == (5.0, 1800.0, 30)
    assert b.log == Path("/m/b.log") and b.directory == Path("/m/b")


def test_exactly_one_downloader_is_located() -> None:
    lines = problems(
        "downloads:\n"
        "  - name: a\n"
        "    directory: /m\n"
        "    pid: 42\n"
        "    unit: dl.service\n"
        "  - {name: b, directory: /m}\n"
        "  - {name: c, directory: /m, process_pattern: '(unclosed'}\n"
        "  - {name: d, directory: /m, pid: 1, path: /x}\n"
    )
    assert lines[0] == (
        "c.yaml:2:5: downloads[0]: name the downloader by exactly one of unit, user_unit, pid, "
        "process_pattern (got unit, pid)"
    )
    assert lines[1].startswith("c.yaml:6:") and "downloads[1]: name the downloader" in lines[1]
    assert lines[2].startswith("c.yaml:7:") and "downloads[2].process_pattern" in lines[2]
    assert lines[3].startswith("c.yaml:8:") and "downloads[3].path" in lines[3]


def test_names_are_unique() -> None:
    (line,) = problems(
        "downloads:\n  - {name: a, directory: /m, pid: 1}\n  - {name: a, directory: /n, pid: 2}\n"
    )
    assert "downloads" in line and "'a' is used twice" in line


def test_check_command_reports_a_download_with_pid_and_unit(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("downloads:\n  - {name: a, directory: /m, pid: 1, unit: dl.service}\n")
    result = subprocess.run(
        [sys.executable, "-m", "inferwatch", "check", "--config", str(config)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert f"{config}:2:5: downloads[0]: name the downloader by exactly one" in result.stdout
