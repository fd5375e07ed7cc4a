"""The grouper's memory across restarts: which alerts each group holds and which it announced.

Alertmanager keeps this in its notification log (nflog), snapshotted every 15 minutes, so a crash
re-pages or forgets a pending resolve (notify.md §4.1). Here the groups are saved as JSON in the
outbox database, in the same transaction as the rows a flush writes and again whenever an alert
joins or leaves a group, so after kill -9 a group resumes exactly: an announced alert is not
announced again, and its resolve still goes out. Groups whose route no longer exists (the config
changed) are dropped; a state that cannot be read is logged and ignored, never fatal.
"""

from __future__ import annotations

import json
from typing import Any

from inferwatch.alerts.model import Alert, AlertState, RuleKey
from inferwatch.labels import make_labels
from inferwatch.notify.group import Group, Grouper

STATE_NAME = "groups"
VERSION = 1


def _alert_doc(a: Alert) -> dict[str, Any]:
    r = a.rule
    return {
        "rule": [r.file, r.group, r.name, r.expr, dict(r.labels)],
        "labels": dict(a.labels),
        "annotations": dict(a.annotations),
        "state": a.state.value,
        "value": a.value if a.value == a.value else None,
        "times": [a.active_at, a.fired_at, a.resolved_at, a.last_eval],
    }


def _alert(doc: dict[str, Any]) -> Alert:
    file, group, name, expr, rule_labels = doc["rule"]
    active_at, fired_at, resolved_at, last_eval = doc["times"]
    value = doc["value"]
    return Alert(
        rule=RuleKey(str(file), str(group), str(name), str(expr), make_labels(rule_labels)),
        labels=make_labels(doc["labels"]),
        annotations=tuple(sorted((str(k), str(v)) for k, v in doc["annotations"].items())),
        state=AlertState(doc["state"]),
        value=float("nan") if value is None else float(value),
        active_at=float(active_at),
        fired_at=None if fired_at is None else float(fired_at),
        resolved_at=None if resolved_at is None else float(resolved_at),
        last_eval=float(last_eval),
    )


def dump(grouper: Grouper) -> str:
    groups = [
        {
            "route": g.route.key,
            "key": g.key,
            "labels": [list(kv) for kv in g.labels],
            "next_at": g.next_at,
            "flushed": g.flushed,
            "sent_at": g.sent_at,
            "alerts": [_alert_doc(a) for a in g.alerts.values()],
        }
        for g in grouper.groups()
    ]
    return json.dumps({"version": VERSION, "groups": groups}, sort_keys=True)


def load(grouper: Grouper, text: str) -> int:
    """Adopt the saved groups whose route still exists; returns how many. Raises ValueError
    (with the reason) on a state that cannot be read."""
    try:
        doc = json.loads(text)
        if doc.get("version") != VERSION:
            raise ValueError(f"unknown version {doc.get('version')!r}")
        nodes = {node.key: node for node in grouper.tree.walk()}
        adopted = 0
        for g in doc["groups"]:
            node = nodes.get(g["route"])
            if node is None:
                continue
            group = Group(
                node, str(g["key"]), tuple((str(k), str(v)) for k, v in g["labels"]),
                float(g["next_at"]),
            )  # fmt: skip
            group.flushed = bool(g["flushed"])
            group.sent_at = {str(k): float(v) for k, v in g["sent_at"].items()}
            for raw in g["alerts"]:
                alert = _alert(raw)
                group.alerts[alert.fingerprint] = alert
            grouper.adopt(group)
            adopted += 1
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"notification group state unreadable: {exc!r}") from None
    return adopted
