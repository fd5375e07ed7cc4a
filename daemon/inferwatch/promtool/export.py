"""``inferwatch export prometheus-rules``: the shipped rules, ready for a real Prometheus.

The rule files load unchanged into Prometheus, with one catch: inferwatch records its recording
rules into its own store and exports them on ``/metrics``, so a Prometheus scraping inferwatch
and evaluating the same rules would hold two series of one name. The export therefore renames
every recording rule's output with a prefix (``prom:`` by default) and rewrites every reference
to it, in expressions and in template ``query`` strings, and says so in a header, together with
the other rule of the road: one alerting path per host.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from inferwatch import __version__
from inferwatch.promql.ast import MatrixSelector, selectors
from inferwatch.promql.engine import PromQLError, load
from inferwatch.promql.index import family_name
from inferwatch.resources import shipped_rules_dir
from inferwatch.rules.loader import load_rule_files
from inferwatch.rules.ruleset import RecordingRule

PREFIX = "prom:"
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')


class ExportError(Exception):
    """The rules could not be exported (a shipped file failed to load or to rewrite)."""


def _rename_in_promql(expr: str, names: dict[str, str]) -> str:
    """Rename metric names outside string literals (whole names only)."""
    out: list[str] = []
    last = 0
    for m in _STRING.finditer(expr):
        out.append(_rename_words(expr[last : m.start()], names))
        out.append(m.group(0))
        last = m.end()
    out.append(_rename_words(expr[last:], names))
    return "".join(out)


def _rename_words(text: str, names: dict[str, str]) -> str:
    for old in sorted(names, key=len, reverse=True):
        text = re.sub(rf"(?<![A-Za-z0-9_:]){re.escape(old)}(?![A-Za-z0-9_:])", names[old], text)
    return text


def _check(expr: str, names: dict[str, str]) -> None:
    try:
        query = load(expr)
    except PromQLError as exc:
        raise ExportError(f"rewritten expression does not parse: {exc}: {expr}") from None
    for sel in selectors(query.ast):
        name = family_name(sel.selector if isinstance(sel, MatrixSelector) else sel)
        if name in names:
            raise ExportError(f"reference to {name} left unrenamed in: {expr}")


def _rewrite_rule(rule: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    out = dict(rule)
    if "record" in out:
        out["record"] = names.get(str(out["record"]), out["record"])
    expr = _rename_in_promql(str(out["expr"]), names)
    _check(expr, names)
    out["expr"] = expr
    for key in ("labels", "annotations"):
        if isinstance(out.get(key), dict):
            coloned = {k: v for k, v in names.items() if ":" in k}
            out[key] = {k: _rename_words(str(v), coloned) for k, v in out[key].items()}
    return out


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _header(prefix: str, renamed: dict[str, str], files: list[str]) -> str:
    lines = [
        f"Prometheus rules exported by `inferwatch export prometheus-rules` (inferwatch "
        f"{__version__}),",
        f"from the rules shipped with inferwatch: {', '.join(files)}.",
        "",
        "Pick ONE alerting path per host: either inferwatch evaluates these rules itself and",
        "notifies (its default), or this Prometheus evaluates them and Alertmanager notifies.",
        "Not both: every alert would arrive twice.",
        "",
        f'Recording rules are renamed with the prefix "{prefix}" and every reference to them is',
        "rewritten, so the series this Prometheus records never clash with those inferwatch",
        "records itself and exports on /metrics:",
    ]
    lines += [f"  {old} -> {new}" for old, new in sorted(renamed.items())] or ["  (none)"]
    return "".join(f"# {line}".rstrip() + "\n" for line in lines)


def export_prometheus_rules(rules_dir: Path | None = None, prefix: str = PREFIX) -> str:
    """The shipped rule files as one Prometheus rule file (text)."""
    directory = rules_dir or shipped_rules_dir()
    paths = sorted(directory.glob("*.yaml"))
    rule_set, problems = load_rule_files(paths)
    if problems:
        raise ExportError("\n".join(str(p) for p in problems))
    names = {
        rule.name: prefix + rule.name
        for _, rule in rule_set.rules()
        if isinstance(rule, RecordingRule)
    }
    groups: list[dict[str, Any]] = []
    seen: set[str] = set()
    for path in paths:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for group in doc.get("groups") or []:
            name = str(group["name"])
            if name in seen:
                name = f"{path.stem}-{name}"
            seen.add(name)
            rules = [_rewrite_rule(r, names) for r in group.get("rules") or []]
            groups.append({**group, "name": name, "rules": rules})
    body = yaml.dump({"groups": groups}, Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                     width=100)  # fmt: skip
    return _header(prefix, names, [p.name for p in paths]) + body
