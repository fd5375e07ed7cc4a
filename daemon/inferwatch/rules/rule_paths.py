"""Which files a list of rule-file patterns names (config ``rule_files``, ``--rules``).

Patterns are globs; ``builtin:rules/*.yaml`` names the rules shipped with inferwatch. A pattern
without wildcards that matches nothing is a missing file, and a problem; a glob that matches
nothing (an empty directory) is not.
"""

from __future__ import annotations

import glob
from collections.abc import Iterable
from pathlib import Path

from inferwatch.errors import Problem
from inferwatch.resources import expand_builtin


def expand_rule_paths(patterns: Iterable[str]) -> tuple[list[Path], list[Problem]]:
    """Globs (and ``builtin:rules/…``) to files, in order; a pattern matching nothing is a
    problem only when it has no wildcard (a missing file, not an empty directory)."""
    out: list[Path] = []
    problems: list[Problem] = []
    for pattern in patterns:
        expanded = expand_builtin(pattern)
        matches = sorted(glob.glob(expanded))  # noqa: PTH207 (patterns are full paths)
        if not matches and not any(c in expanded for c in "*?["):
            problems.append(Problem(pattern, 1, 1, "", "no such rule file"))
        out.extend(Path(m) for m in matches if Path(m).is_file())
    return list(dict.fromkeys(out)), problems
