"""``notify-test``: one clearly-marked synthetic alert through every integration of a receiver.

Why: the owner must learn that a webhook URL or a bot token is wrong before a GPU falls off the
bus, not after. The message goes straight through the channels, bypassing route, grouping,
silences and the outbox, so it works whether or not the daemon runs and reports each service's
own verdict (ok / retry / permanent) instead of a queued-and-hoped row. It is a firing alert
named ``InferwatchTest`` with severity ``info`` and a summary saying it is a test, so nobody
mistakes it for a page; each run gets its own idempotency key so a receiver that deduplicates
still shows a second test.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from inferwatch.alerts.model import ALERTNAME, Alert, AlertState, RuleKey
from inferwatch.config.defaults import default_external_labels
from inferwatch.config.models import Config
from inferwatch.labels import make_labels
from inferwatch.notify.channels import Notifier, build
from inferwatch.notify.payload import webhook_v4
from inferwatch.notify.retry import Outcome, OutcomeKind

TEST_ALERTNAME = "InferwatchTest"
TEST_SEVERITY = "info"


class UnknownReceiverError(LookupError):
    """The receiver is not in the config; ``known`` lists the ones that are."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        self.name = name
        self.known = list(known)
        super().__init__(f"no receiver {name!r}; known: {', '.join(self.known) or '(none)'}")


@dataclass(frozen=True, slots=True)
class Verdict:
    """How one integration answered the test message."""

    integration: str
    outcome: Outcome

    @property
    def ok(self) -> bool:
        return self.outcome.kind is OutcomeKind.OK

    def text(self) -> str:
        """``ok``, ``retry: reason`` or ``permanent: reason`` (reason already redacted)."""
        if self.ok:
            return "ok"
        return f"{self.outcome.kind.value}: {self.outcome.reason or 'no reason given'}"


def synthetic_alert(external_labels: dict[str, str], now: float) -> Alert:
    """The synthetic alert: firing since ``now``, labelled like a real one from this host."""
    labels = make_labels({**external_labels, ALERTNAME: TEST_ALERTNAME, "severity": TEST_SEVERITY})
    host = external_labels.get("host", "")
    annotations = (
        ("description", f"Sent by `inferwatch notify-test` from {host or 'this host'}."),
        ("summary", "inferwatch test notification: this is not a real alert"),
        ("summary_zh", "inferwatch 测试通知：这不是真实告警"),
    )
    rule = RuleKey(file="", group="notify-test", name=TEST_ALERTNAME, expr="vector(1)", labels=())
    return Alert(
        rule=rule,
        labels=labels,
        annotations=annotations,
        state=AlertState.FIRING,
        value=1.0,
        active_at=now,
        fired_at=now,
        last_eval=now,
    )


def synthetic_payload(receiver: str, external_labels: dict[str, str], now: float) -> dict[str, Any]:
    """The Alertmanager v4 payload carrying :func:`synthetic_alert`, as the daemon would send it."""
    return webhook_v4(
        receiver=receiver,
        group_key=f'{{}}:{{alertname="{TEST_ALERTNAME}"}}',
        group_labels={ALERTNAME: TEST_ALERTNAME},
        alerts=[synthetic_alert(external_labels, now)],
        external_url="",
        generator_url="",
    )


def receiver_integrations(config: Config, receiver: str) -> list[tuple[str, str, dict[str, Any]]]:
    """``(name, kind, settings)`` per integration, named as the daemon names them
    (``webhook``, ``webhook/1``...) so the verdicts match the outbox and metrics."""
    found = {r.name: r for r in config.receivers}
    if receiver not in found:
        raise UnknownReceiverError(receiver, sorted(found))
    out: list[tuple[str, str, dict[str, Any]]] = []
    for key, items in found[receiver].integrations().items():
        kind = key.removesuffix("_configs")
        for index, item in enumerate(items):
            out.append((kind if index == 0 else f"{kind}/{index}", kind, item))
    return out


async def _send_one(notifier: Notifier, payload: dict[str, Any], key: str) -> Outcome:
    try:
        return await notifier.notify(payload, idempotency_key=key)
    except Exception as exc:  # a notifier must not raise; if one does, the test says so
        return Outcome.permanent(f"notifier raised {type(exc).__name__}: {exc}")
    finally:
        await notifier.aclose()


async def send_test(config: Config, receiver: str, now: float | None = None) -> list[Verdict]:
    """Send the test message through each integration of ``receiver``, one after another.

    Raises :class:`UnknownReceiverError`; an integration that cannot be built is a permanent
    verdict (the daemon would skip it too), not an exception."""
    integrations = receiver_integrations(config, receiver)
    when = time.time() if now is None else now
    payload = synthetic_payload(receiver, default_external_labels(config.external_labels), when)
    run_id = uuid.uuid4().hex
    verdicts: list[Verdict] = []
    for name, kind, settings in integrations:
        try:
            notifier = build(kind, settings)
        except ValueError as exc:
            verdicts.append(Verdict(name, Outcome.permanent(f"not usable: {exc}")))
            continue
        outcome = await _send_one(notifier, payload, f"notify-test:{run_id}:{name}")
        verdicts.append(Verdict(name, outcome))
    return verdicts


__all__ = ["TEST_ALERTNAME", "UnknownReceiverError", "Verdict", "send_test", "synthetic_payload"]
