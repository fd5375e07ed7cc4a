"""The notification part of the config, in Alertmanager's own syntax.

Route, inhibit rules and time intervals are typed here. A receiver accepts any
``<kind>_configs`` list of mappings: which kinds exist, and each one's own fields
(``webhook_configs`` items and so on), are notify's to judge (``notify.validate`` builds every
entry as the daemon will), so this level checks only the shape.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from inferwatch.config.types import Duration, resolve_secret
from inferwatch.redact import register_secret

INTEGRATION_SUFFIX = "_configs"
"""A receiver's integrations are its ``<kind>_configs`` lists. Which kinds exist is notify's
registry (config does not import notify); ``notify.validate`` rejects an unknown kind at its
place in the file."""


# Fields of integrations whose values are credentials (or URLs that embed one).
SECRET_FIELDS = frozenset(
    {
        "url",
        "webhook_url",
        "api_url",
        "token",
        "bot_token",
        "key",
        "secret",
        "password",
        "sendkey",
        "device_key",
        "user_key",
        "api_key",
        "app_token",
        "routing_key",
        "credentials",  # http_config.authorization
        "bearer_token",
    }
)


def resolve_refs(value: Any, field: str = "") -> Any:
    """Resolve ``env:``/``file:`` references inside an integration config and register every
    credential-bearing value with the redactor, so it never reaches a log, status or metric."""
    if isinstance(value, dict):
        return {k: resolve_refs(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_refs(v, field) for v in value]
    if isinstance(value, str):
        if value.startswith(("env:", "file:")):
            return resolve_secret(value).get_secret_value()
        if field in SECRET_FIELDS or field.endswith("_file"):
            register_secret(value)
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class GlobalConfig(_Strict):
    resolve_timeout: Duration = 300.0
    http_config: dict[str, Any] | None = None
    wecom_api_url: str | None = None
    telegram_api_url: str | None = None
    slack_api_url: str | None = None


class Route(_Strict):
    receiver: str | None = None
    group_by: list[str] | None = None
    group_wait: Duration | None = None
    group_interval: Duration | None = None
    repeat_interval: Duration | None = None
    matchers: list[str] = Field(default_factory=list)
    routes: list[Route] = Field(default_factory=list)
    continue_: bool = Field(default=False, alias="continue")
    mute_time_intervals: list[str] = Field(default_factory=list)
    active_time_intervals: list[str] = Field(default_factory=list)
    # inferwatch extension: quiet hours that hold (not drop) messages until the interval ends;
    # inherited by child routes unless they set their own (``[]`` = never held).
    hold_time_intervals: list[str] | None = None


class Receiver(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    name: str

    @model_validator(mode="before")
    @classmethod
    def _known_integrations(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key, value in data.items():
                if key == "name":
                    continue
                if not key.endswith(INTEGRATION_SUFFIX):
                    raise ValueError(
                        f"unknown receiver field {key!r}; expected name and <kind>_configs lists"
                    )
                if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
                    raise ValueError(f"{key} must be a list of mappings")
            return {k: (v if k == "name" else resolve_refs(v)) for k, v in data.items()}
        return data

    def integrations(self) -> dict[str, list[dict[str, Any]]]:
        extra = self.model_extra or {}
        return {k: v for k, v in extra.items() if k.endswith(INTEGRATION_SUFFIX)}


class InhibitRule(_Strict):
    source_matchers: list[str] = Field(default_factory=list)
    target_matchers: list[str] = Field(default_factory=list)
    equal: list[str] = Field(default_factory=list)


class TimeRange(_Strict):
    start_time: str
    end_time: str


class TimeIntervalSpec(_Strict):
    times: list[TimeRange] = Field(default_factory=list)
    weekdays: list[str] = Field(default_factory=list)
    days_of_month: list[str] = Field(default_factory=list)
    months: list[str] = Field(default_factory=list)
    years: list[str] = Field(default_factory=list)
    location: str = "Local"


class TimeInterval(_Strict):
    name: str
    time_intervals: list[TimeIntervalSpec]


class Digest(_Strict):
    """A scheduled summary: ``cron`` (five fields, read in ``timezone``) says when, ``window`` how
    far back it looks (compared with the window before it), ``receiver`` where it goes (default:
    the route's root receiver), ``language`` how it reads (default: the top-level language)."""

    name: str
    cron: str
    receiver: str | None = None
    kind: Literal["daily"] = "daily"
    window: Annotated[Duration, Field(gt=0)] = 86400.0
    language: Literal["en", "zh"] | None = None
    timezone: str = "Local"
