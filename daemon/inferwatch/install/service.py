"""Install and remove the service: the unit file, the example config when there is none, and
``systemctl daemon-reload`` (plus ``disable --now`` before removal).

Everything is said on ``out`` as it happens; problems go to ``err`` and set the exit status
(1: something could not be done, 2: the config the unit would run is not valid).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from inferwatch.configfile import load_config
from inferwatch.errors import ConfigError
from inferwatch.install import unit
from inferwatch.resources import shipped_deploy_file

SYSTEMCTL_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class Target:
    """Where a system or a user installation puts things."""

    user: bool
    unit_dir: Path
    config: Path
    config_in_unit: str | None  # None: the unit's own %E/inferwatch/config.yaml

    @classmethod
    def of(cls, *, user: bool, unit_dir: str | None, config: str | None) -> Target:
        xdg = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
        if unit_dir is not None:
            units = Path(unit_dir)
        else:
            units = xdg / "systemd" / "user" if user else Path("/etc/systemd/system")
        if config is not None:
            path = Path(config).absolute()
            return cls(user, units, path, str(path))
        default = (xdg if user else Path("/etc")) / "inferwatch" / "config.yaml"
        return cls(user, units, default, None)

    @property
    def unit_path(self) -> Path:
        return self.unit_dir / unit.UNIT_NAME

    def systemctl(self, *args: str) -> list[str]:
        return ["systemctl", *(["--user"] if self.user else []), *args]

    def journalctl(self) -> str:
        return f"journalctl {'--user ' if self.user else ''}-u inferwatch -f"


def install(
    target: Target, out: TextIO, err: TextIO, *, systemctl: bool = True, dry_run: bool = False
) -> int:
    text = unit.render(
        unit.template(), unit.this_inferwatch(), user=target.user, config=target.config_in_unit
    )
    example = shipped_deploy_file("config.example.yaml")
    if dry_run:
        out.write(text)
        what = "keep" if target.config.exists() else f"copy {example} to"
        print(f"# would write {target.unit_path} and {what} {target.config}", file=out)
        return 0
    try:
        _write_config(target.config, example, out)
        target.unit_path.parent.mkdir(parents=True, exist_ok=True)
        target.unit_path.write_text(text, encoding="utf-8")
        target.unit_path.chmod(0o644)
    except OSError as exc:
        hint = "" if target.user or os.geteuid() == 0 else " (run as root, or use --user)"
        print(f"install-service: {exc.filename or ''}: {exc.strerror}{hint}", file=err)
        return 1
    print(f"wrote {target.unit_path}", file=out)
    status = _check(target.config, err)
    if systemctl and not _run(target.systemctl("daemon-reload"), err):
        return 1
    sc = " ".join(target.systemctl())
    print(f"next: {sc} enable --now inferwatch    then watch it: {target.journalctl()}", file=out)
    if target.user:
        print("to keep it running without a login session: loginctl enable-linger", file=out)
    return status


def uninstall(target: Target, out: TextIO, err: TextIO, *, systemctl: bool = True) -> int:
    if systemctl and target.unit_path.exists():
        _run(target.systemctl("disable", "--now", unit.UNIT_NAME), err)
    try:
        target.unit_path.unlink()
    except FileNotFoundError:
        print(f"uninstall-service: {target.unit_path} is not there", file=err)
        return 1
    except OSError as exc:
        print(f"uninstall-service: {target.unit_path}: {exc.strerror}", file=err)
        return 1
    print(f"removed {target.unit_path}", file=out)
    if systemctl and not _run(target.systemctl("daemon-reload"), err):
        return 1
    print(f"kept {target.config.parent} and the state directory: remove them yourself", file=out)
    return 0


def _write_config(path: Path, example: Path, out: TextIO) -> None:
    if path.exists():
        print(f"kept the existing config {path}", file=out)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    # owner-only: receivers may carry webhook URLs and tokens
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(example.read_text(encoding="utf-8"))
    print(f"wrote {path} from {example}: add your engines and receivers", file=out)


def _check(config: Path, err: TextIO) -> int:
    """The service would not start with a config that does not load: say why (exit 2)."""
    try:
        load_config(config)
    except ConfigError as exc:
        for problem in exc.problems:
            print(problem, file=err)
        print(f"install-service: fix {config} before starting the service", file=err)
        return 2
    return 0


def _run(command: Sequence[str], err: TextIO) -> bool:
    if shutil.which(command[0]) is None:
        print(f"{command[0]} not found: run `{' '.join(command)}` where systemd runs", file=err)
        return False
    try:
        done = subprocess.run(
            list(command), capture_output=True, text=True, timeout=SYSTEMCTL_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        print(f"`{' '.join(command)}` timed out", file=err)
        return False
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        reason = said[-1] if said else f"exit {done.returncode}"
        print(f"`{' '.join(command)}` failed: {reason}", file=err)
        return False
    return True
