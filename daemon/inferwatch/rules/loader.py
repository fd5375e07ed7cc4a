"""Read Prometheus rule files into a :class:`RuleSet`, refusing what ``promtool check rules`` does.

Checks follow Prometheus 2.42's rule-file validation (checked against promtool): strict keys,
non-empty unique group names, exactly one of ``alert``/``record``, a valid recording-rule name,
no ``for``/``keep_firing_for``/``annotations`` on recording rules, durations, label and
annotation names, templates that parse and PromQL that parses. On top of that, whatever our
evaluator does not implement (a subquery, a function newer than 2.42, a template function we
lack) is refused here, by name, instead of failing at every evaluation. Newer Prometheus's group
``labels`` and ``query_offset`` are accepted.

Every problem is a located :class:`Problem` (``PATH:LINE:COL: field: message``). A file with any
problem contributes no groups, as Prometheus refuses the whole file; other files still load.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from inferwatch.alerts.model import RuleKey
from inferwatch.config.yamlpos import Loc, Located, format_loc, load_located
from inferwatch.durations import DurationError, parse_duration_s
from inferwatch.errors import Problem
from inferwatch.gotemplate.templates import Template, TemplateParseError, compile_template
from inferwatch.labels import make_labels, valid_metric_name
from inferwatch.promql.engine import PromQLError, Query, load, shared_subexpressions
from inferwatch.rules.rule_paths import expand_rule_paths
from inferwatch.rules.ruleset import AlertingRule, RecordingRule, Rule, RuleGroup, RuleSet

__all__ = [
    "expand_rule_paths",
    "load_rule_file",
    "load_rule_files",
    "load_rule_text",
    "reload_rule_files",
]

_TOP_KEYS = frozenset({"groups"})
_GROUP_KEYS = frozenset({"name", "interval", "limit", "rules", "labels", "query_offset"})
_RULE_KEYS = frozenset(
    {"record", "alert", "expr", "for", "keep_firing_for", "labels", "annotations"}
)
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_TYPES = {(): "rulefmt.RuleGroups", ("group",): "rulefmt.RuleGroup", ("rule",): "rulefmt.RuleNode"}


class _File:
    """One file being checked: its located data and the problems found so far."""

    def __init__(self, located: Located, path: str) -> None:
        self.located = located
        self.path = path
        self.problems: list[Problem] = list(located.problems)

    def problem(self, loc: Loc, message: str) -> None:
        line, col = self.located.position(loc)
        self.problems.append(Problem(self.path, line, col, format_loc(loc), message))

    def mapping(self, value: Any, loc: Loc, allowed: frozenset[str], kind: str) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.problem(loc, f"expected a mapping, got {type(value).__name__}")
            return {}
        for key in value:
            if key not in allowed:
                self.problem((*loc, str(key)), f"field {key} not found in type {kind}")
        return value

    def seconds(self, value: Any, loc: Loc) -> float:
        if value is None:
            return 0.0
        try:
            return parse_duration_s(_text(value))
        except DurationError:
            self.problem(loc, f'not a valid duration string: "{_text(value)}"')
            return 0.0

    def strings(self, value: Any, loc: Loc, what: str) -> dict[str, str]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.problem(loc, f"{what}s must be a mapping")
            return {}
        out: dict[str, str] = {}
        for key, item in value.items():
            name = str(key)
            if not _LABEL_NAME.fullmatch(name) or (what == "label" and name == "__name__"):
                self.problem((*loc, name), f"invalid {what} name: {name}")
            if isinstance(item, dict | list):
                self.problem((*loc, name), f"invalid {what} value for {name}: not a string")
            out[name] = _text(item)
        return out


def _text(value: Any) -> str:
    """A YAML scalar as the string Go's YAML decoder would give (``false`` → "false")."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _template(f: _File, text: str, name: str, loc: Loc, what: str) -> Template | None:
    try:
        return compile_template(text, f"__alert_{name}")
    except TemplateParseError as exc:
        f.problem(loc, f'{what} "{loc[-1]}": {exc}')
        return None


def _query(f: _File, expr: Any, loc: Loc) -> Query | None:
    text = _text(expr).strip()
    if not text:
        f.problem(loc, "field 'expr' must be set in rule")
        return None
    try:
        return load(text)
    except PromQLError as exc:
        f.problem(loc, f"could not parse expression: {exc}")
        return None


def _literal_queries(templates: Iterable[Template]) -> tuple[Query, ...]:
    out: list[Query] = []
    for t in templates:
        for text in t.query_literals():
            try:
                out.append(load(text))
            except PromQLError:
                continue  # fails at expansion time, as in Prometheus
    return tuple(out)


def _rule(f: _File, node: Any, loc: Loc, group: str, extra: Mapping[str, str]) -> Rule | None:
    d = f.mapping(node, loc, _RULE_KEYS, _TYPES[("rule",)])
    record, alert = _text(d.get("record")), _text(d.get("alert"))
    if record and alert:
        f.problem(loc, "only one of 'record' and 'alert' must be set")
        return None
    if not record and not alert:
        f.problem(loc, "one of 'record' or 'alert' must be set")
        return None
    query = _query(f, d.get("expr"), (*loc, "expr"))
    labels = {**extra, **f.strings(d.get("labels"), (*loc, "labels"), "label")}
    line = f.located.position(loc)[0]
    if record:
        if not valid_metric_name(record):
            f.problem((*loc, "record"), f"invalid recording rule name: {record}")
        for field in ("annotations", "for", "keep_firing_for"):
            if field in d:
                f.problem((*loc, field), f"invalid field '{field}' in recording rule")
        if query is None:
            return None
        static = tuple(sorted(labels.items()))
        key = RuleKey(f.path, group, record, query.text, make_labels(labels))
        return RecordingRule(record, query, static, key, line)
    for_s = f.seconds(d.get("for"), (*loc, "for"))
    keep_s = f.seconds(d.get("keep_firing_for"), (*loc, "keep_firing_for"))
    annotations = f.strings(d.get("annotations"), (*loc, "annotations"), "annotation")
    label_t = {k: _template(f, v, alert, (*loc, "labels", k), "label") for k, v in labels.items()}
    notes_t = {
        k: _template(f, v, alert, (*loc, "annotations", k), "annotation")
        for k, v in annotations.items()
    }
    if query is None:
        return None
    lt = tuple((k, t) for k, t in sorted(label_t.items()) if t is not None)
    at = tuple((k, t) for k, t in sorted(notes_t.items()) if t is not None)
    raw = make_labels(labels)
    key = RuleKey(f.path, group, alert, query.text, raw)
    literals = _literal_queries(t for _, t in (*lt, *at))
    return AlertingRule(alert, query, for_s, keep_s, lt, at, raw, key, line, literals)


def _group(f: _File, node: Any, loc: Loc, seen: set[str]) -> RuleGroup | None:
    d = f.mapping(node, loc, _GROUP_KEYS, _TYPES[("group",)])
    name = _text(d.get("name"))
    if not name:
        f.problem(loc, "Groupname must not be empty")
    elif name in seen:
        f.problem((*loc, "name"), f'groupname: "{name}" is repeated in the same file')
    seen.add(name)
    interval = f.seconds(d.get("interval"), (*loc, "interval")) if "interval" in d else None
    offset = f.seconds(d.get("query_offset"), (*loc, "query_offset"))
    limit = d.get("limit", 0)
    if not isinstance(limit, int) or isinstance(limit, bool):
        f.problem((*loc, "limit"), f"limit must be an integer, got {limit!r}")
        limit = 0
    extra = f.strings(d.get("labels"), (*loc, "labels"), "label")
    raw_rules = d.get("rules") or []
    if not isinstance(raw_rules, list):
        f.problem((*loc, "rules"), "rules must be a list")
        raw_rules = []
    rules = [_rule(f, r, (*loc, "rules", i), name, extra) for i, r in enumerate(raw_rules)]
    kept = [r for r in rules if r is not None]
    # The group's rules are evaluated with one Ctx: what two of its reads share is kept.
    shared = shared_subexpressions([r.query.ast for r in kept])
    queries = [r.query.sharing(s) for r, s in zip(kept, shared, strict=True)]
    together = tuple(
        r if q is r.query else replace(r, query=q) for r, q in zip(kept, queries, strict=True)
    )
    return RuleGroup(name, f.path, together, interval or None, limit, offset)


def load_rule_text(text: str, path: str) -> tuple[list[RuleGroup], list[Problem]]:
    """Check one file's text; its groups, or none at all if anything is wrong."""
    try:
        located = load_located(text, path)
    except yaml.YAMLError as exc:  # load_located lets constructor errors through (`key: =`)
        mark = getattr(exc, "problem_mark", None)
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        why = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return [], [Problem(path, line, col, "", f"YAML: {why}")]
    f = _File(located, path)
    if f.problems:
        return [], f.problems
    d = f.mapping(f.located.data, (), _TOP_KEYS, _TYPES[()])
    raw_groups = d.get("groups") or []
    if not isinstance(raw_groups, list):
        f.problem(("groups",), "groups must be a list")
        raw_groups = []
    seen: set[str] = set()
    groups = [_group(f, g, ("groups", i), seen) for i, g in enumerate(raw_groups)]
    if f.problems:
        return [], f.problems
    return [g for g in groups if g is not None], []


def load_rule_file(path: str | Path) -> tuple[list[RuleGroup], list[Problem]]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [], [Problem(str(path), 1, 1, "", f"cannot read rule file: {exc}")]
    return load_rule_text(text, str(path))


def load_rule_files(paths: Iterable[str | Path]) -> tuple[RuleSet, list[Problem]]:
    """Load every file; a bad file is reported and skipped, the good ones load."""
    groups: list[RuleGroup] = []
    problems: list[Problem] = []
    for path in paths:
        found, bad = load_rule_file(path)
        groups.extend(found)
        problems.extend(bad)
    return RuleSet(tuple(groups)), problems


def reload_rule_files(
    paths: Iterable[str | Path], previous: RuleSet
) -> tuple[RuleSet, list[Problem]]:
    """A reload: like :func:`load_rule_files`, but a file that now fails keeps the groups it
    had in ``previous`` (a typo being edited does not silence a file's alerts); a file that is
    gone or never loaded contributes nothing."""
    groups: list[RuleGroup] = []
    problems: list[Problem] = []
    for path in paths:
        found, bad = load_rule_file(path)
        if bad:
            found = [g for g in previous.groups if g.file == str(path)]
        groups.extend(found)
        problems.extend(bad)
    return RuleSet(tuple(groups)), problems
