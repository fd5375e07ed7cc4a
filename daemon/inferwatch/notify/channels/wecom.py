"""WeCom group robot (企业微信群机器人), configured as ``wecom_configs``.

WeCom answers HTTP 200 even when it refuses, so the verdict is the body's ``errcode``
(notify.md §3.1): 0 ok; 45009 (20/min per robot) and -1 (busy) retry, 45009 no sooner than the
minute window; 93000 (key removed) and every other code are permanent. The ``key`` in the query
is the whole credential: it is registered for redaction, may live in ``key_file`` (read at send
time so a rotated key needs no reload) and no error text is built from the URL. ``markdown`` is
the default type (``markdown_v2`` shows raw on old clients); ``text`` carries ``mentioned_list``
so a critical alert can ring a person.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from inferwatch.notify.channels.common import ChatOptions, chat_fields, check_secret, secret_fields
from inferwatch.notify.channels.http_channel import (
    HttpChannel,
    Post,
    ResultCode,
    json_post,
    secret_or_file,
)
from inferwatch.notify.message import Style, fit

DEFAULT_API_URL = "https://qyapi.weixin.qq.com/cgi-bin/webhook/send"
MsgType = Literal["markdown", "markdown_v2", "text"]
LIMITS = {"markdown": 4096, "markdown_v2": 4096, "text": 2048}
RATE_LIMITED, BUSY = 45009, -1
RATE_WINDOW = 60.0


@dataclass(frozen=True, slots=True)
class WeComConfig(ChatOptions):
    key: str | None = None
    key_file: Path | None = None
    api_url: str = DEFAULT_API_URL
    msgtype: MsgType = "markdown"
    mentioned_list: tuple[str, ...] = ()
    mentioned_mobile_list: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_secret("wecom", "key", self.key, self.key_file)
        if self.msgtype not in LIMITS:
            raise ValueError(f"wecom: msgtype must be one of {sorted(LIMITS)}")
        if self.language not in ("en", "zh"):
            raise ValueError("wecom: language must be en or zh")

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> WeComConfig:
        return cls(
            **secret_fields(raw, "key"),
            api_url=str(raw.get("api_url") or DEFAULT_API_URL),
            msgtype=cast(MsgType, raw.get("msgtype", "markdown")),
            mentioned_list=tuple(raw.get("mentioned_list") or ()),
            mentioned_mobile_list=tuple(raw.get("mentioned_mobile_list") or ()),
            **chat_fields(raw, "wecom"),
        )

    def resolve_key(self) -> str:
        return secret_or_file(self.key, self.key_file)


def build_body(config: WeComConfig, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The robot's JSON for one group; mentions ring only for a critical firing group."""
    kind = config.msgtype
    style: Style = "text" if kind == "text" else "markdown"
    msg = config.render_message(payload, style=style, limit=LIMITS[kind] - 200)
    ring = msg.severity == "critical"
    if kind == "text":
        inner: dict[str, Any] = {"content": f"{msg.title}\n\n{msg.body}"}
        if ring and config.mentioned_list:
            inner["mentioned_list"] = list(config.mentioned_list)
        if ring and config.mentioned_mobile_list:
            inner["mentioned_mobile_list"] = list(config.mentioned_mobile_list)
        inner["content"] = fit(inner["content"], LIMITS[kind])
        return {"msgtype": "text", "text": inner}
    content = msg.body
    if kind == "markdown":  # only classic markdown has colours and <@userid> mentions
        colour = {"critical": "warning", "resolved": "info"}.get(msg.severity, "comment")
        content = f'## <font color="{colour}">{msg.title}</font>\n{content}'
        if ring and config.mentioned_list:
            content += "\n" + " ".join(f"<@{u}>" for u in config.mentioned_list)
    else:
        content = f"## {msg.title}\n{content}"
    return {"msgtype": kind, kind: {"content": fit(content, LIMITS[kind])}}


class WeComNotifier(HttpChannel[WeComConfig]):
    integration = "wecom"
    credential = "key_file"
    result_code = ResultCode(
        ("errcode",), ("errmsg",), ok=0,
        retry=lambda c: c == BUSY, pauses={RATE_LIMITED: RATE_WINDOW},
    )  # fmt: skip

    def request(self, group: Mapping[str, Any], idempotency_key: str | None) -> Post:
        body = build_body(self.config, group)
        return json_post(self.config.api_url, body, params={"key": self.config.resolve_key()})


def wecom_factory(raw: Mapping[str, Any]) -> WeComNotifier:
    return WeComNotifier(WeComConfig.from_mapping(raw))
