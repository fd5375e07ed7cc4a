"""Every flag and argument of every command says what it is for (``--help`` is the manual)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from inferwatch.cli import build_parser


def walk(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction | argparse._VersionAction):
            yield path, action


def test_every_flag_of_every_command_has_help() -> None:
    found = list(walk(build_parser(), "inferwatch"))
    assert len(found) > 40  # the walk reaches the subcommands
    missing = [
        f"{path} {'/'.join(a.option_strings) or a.dest}"
        for path, a in found
        if not (a.help and a.help.strip()) or a.help == argparse.SUPPRESS
    ]
    assert missing == []


def test_the_walk_sees_a_flag_without_help() -> None:
    parser = build_parser()
    parser.add_argument("--undocumented")
    assert any(a.dest == "undocumented" and not a.help for _, a in walk(parser, "inferwatch"))
