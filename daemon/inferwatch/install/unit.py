"""The shipped systemd unit (deploy/systemd/inferwatch.service), rendered for one installation.

ExecStart= names this installation's ``inferwatch``. A unit for a user's service manager
(``systemctl --user``) leaves out what only the system manager can apply: capabilities, file
system namespaces, the system state directory, ordering against system units.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from inferwatch.resources import shipped_deploy_file

UNIT_NAME = "inferwatch.service"
# %E: /etc for the system manager, $XDG_CONFIG_HOME for a user's
DEFAULT_CONFIG = "%E/inferwatch/config.yaml"

# systemd.exec(5): capabilities and mount namespaces are "only available for system services"
# (a user manager could apply them only with PrivateUsers=, which would also hide the host's
# other users). StateDirectory= of a user unit is $XDG_CONFIG_HOME in systemd 252, not the
# daemon's ~/.local/state; network-online.target and docker.service are system units.
SYSTEM_ONLY = frozenset(
    {
        "CapabilityBoundingSet",
        "AmbientCapabilities",
        "ProtectSystem",
        "ProtectHome",
        "PrivateTmp",
        "ProtectKernelTunables",
        "ProtectKernelModules",
        "ProtectControlGroups",
        "StateDirectory",
        "StateDirectoryMode",
        "Wants",
        "After",
    }
)
USER_NOTE = (
    "# Rendered for a user's service manager (systemctl --user): the capability and file-system\n"
    "# settings, which only the system manager applies, are left out. The daemon sees what this\n"
    "# user may see; its state is in ~/.local/state/inferwatch.\n"
)


def template() -> str:
    return shipped_deploy_file("systemd/" + UNIT_NAME).read_text(encoding="utf-8")


def this_inferwatch() -> list[str]:
    """The command that starts this installation's inferwatch, as absolute paths: the script
    that runs now, else the one beside this Python (a venv's bin/), else ``python -m``."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "inferwatch" and argv0.is_file():
        return [str(argv0.absolute())]  # not resolve(): a venv's links are the installation
    beside = Path(sys.executable).with_name("inferwatch")
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside.absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "inferwatch"]


def quote(arg: str, *, specifiers: bool = False) -> str:
    """One ExecStart= word: ``%`` and ``$`` taken literally, quoted when it holds blanks or
    quotes (systemd.service(5) "Command lines"). ``specifiers`` keeps ``%E`` and friends."""
    text = arg if specifiers else arg.replace("%", "%%")
    text = text.replace("$", "$$")
    if any(c.isspace() or c in "\"'\\;" for c in text):
        text = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def exec_start(command: Sequence[str], config: str | None) -> str:
    words = [quote(w) for w in command]
    words += ["run", "--config", quote(config) if config else DEFAULT_CONFIG]
    return "ExecStart=" + " ".join(words)


def render(text: str, command: Sequence[str], *, user: bool, config: str | None = None) -> str:
    """The unit ``text`` with ExecStart= running ``command``; for ``user``, without the
    :data:`SYSTEM_ONLY` directives (and the comments just above them), wanted by
    default.target."""
    out: list[str] = []
    comments: list[str] = []
    for line in text.splitlines(keepends=True):
        if line.startswith("#"):
            comments.append(line)
            continue
        key = line.split("=", 1)[0].strip() if "=" in line and line[:1].isalpha() else ""
        if user and key in SYSTEM_ONLY:
            comments = []
            continue
        out.extend(comments)
        comments = []
        if key == "ExecStart":
            out.append(exec_start(command, config) + "\n")
        elif user and line.strip() == "WantedBy=multi-user.target":
            out.append("WantedBy=default.target\n")
        else:
            out.append(line)
    out.extend(comments)
    return (USER_NOTE + "\n" if user else "") + "".join(out)
