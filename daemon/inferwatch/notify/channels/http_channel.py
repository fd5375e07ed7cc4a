"""What every HTTP channel shares: the one ``notify`` (grouping, request, verdict, redaction),
its own httpx client (environment proxies ignored unless the receiver's
``http_config.proxy_url`` names one; TLS, redirects and credentials from the rest of its
``http_config``: :mod:`.httpconfig`), the ``send_resolved`` and ``max_alerts`` filters, and
closing. Configs inherit :class:`~.common.CommonOptions`.

A channel module says only what differs between providers: its config, the :class:`Post` for
one group (URL, headers, body), and how to read the provider's answer (a :class:`ResultCode`
in a 2xx JSON body, or its own :meth:`HttpChannel.verdict` and :meth:`HttpChannel.detail`).
Everything else (transport errors, an unreadable credential file, HTTP status classification
with ``Retry-After``, redaction of the reason) is decided here, once, so the channels cannot
drift apart.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import httpx

from inferwatch.clock import SYSTEM_CLOCK, Clock
from inferwatch.notify.channels.common import CommonOptions
from inferwatch.notify.channels.httpconfig import secret_or_file
from inferwatch.notify.payload import truncate, without_resolved
from inferwatch.notify.retry import Outcome, classify_exception, classify_http
from inferwatch.redact import redact

C = TypeVar("C", bound=CommonOptions)
DETAIL_CHARS = 200  # how much of a provider's answer a failure reason quotes


def json_body(body: Any) -> bytes:
    """A JSON request body as the chat providers expect it: UTF-8, non-ASCII kept as is."""
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


@dataclass(frozen=True, slots=True)
class Post:
    """One POST to a provider. Built at send time, so a credential file is read then (a rotated
    token needs no reload) and a signature carries the time of the attempt."""

    url: str
    content: bytes | None = None
    headers: Mapping[str, str] | None = None
    params: Mapping[str, str] | None = None
    form: Mapping[str, str] | None = None


def json_post(
    url: str,
    body: Any,
    *,
    content_type: str = "application/json",
    params: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Post:
    """A chat provider's JSON POST (:func:`json_body`): ``Content-Type`` as that provider
    spells it, then any other ``headers``."""
    return Post(url, json_body(body), {"Content-Type": content_type, **(headers or {})}, params)


def _never(code: int) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class ResultCode:
    """How a provider that answers 2xx even when it refuses states its verdict: a numeric code
    in a JSON body. ``code_keys``/``text_keys`` are tried in order (Feishu's older servers say
    ``StatusCode``); ``ok`` is delivered, a code in ``pauses`` retries after that many seconds,
    one ``retry`` accepts retries at once, any other is permanent. An unreadable answer retries:
    something other than the provider answered (a captive portal, a proxy page)."""

    code_keys: tuple[str, ...]
    text_keys: tuple[str, ...]
    ok: int
    retry: Callable[[int], bool] = _never
    pauses: Mapping[int, float] = field(default_factory=dict)

    def read(self, content: bytes) -> tuple[int, str] | None:
        """The code and its message (cut to 200 characters), or None when the answer is not
        that JSON."""
        try:
            doc = json.loads(content)
            code = next(doc[k] for k in self.code_keys if k in doc)
            text = next((doc[k] for k in self.text_keys if k in doc), "")
            return int(code), str(text)[:DETAIL_CHARS]
        except (ValueError, StopIteration, TypeError, AttributeError):
            return None

    def outcome(self, channel: str, content: bytes, status: int) -> Outcome:
        found = self.read(content)
        if found is None:
            return Outcome.retry(f"{channel}: unreadable answer", status=status)
        code, text = found
        if code == self.ok:
            return Outcome.ok(status)
        reason = f"{channel}: {self.code_keys[0]} {code}: {text}"
        if code in self.pauses:
            return Outcome.retry(reason, self.pauses[code], status)
        if self.retry(code):
            return Outcome.retry(reason, status=status)
        return Outcome.permanent(reason, status)


def error_text(content: bytes, render: Callable[[Any], str]) -> str:
    """A provider's error JSON as ``render`` words it, or the raw head of a non-JSON answer;
    at most 200 characters either way."""
    try:
        return render(json.loads(content))[:DETAIL_CHARS]
    except (ValueError, AttributeError, KeyError, TypeError):
        return content[:DETAIL_CHARS].decode("utf-8", "replace")


class HttpChannel(Generic[C]):
    """One configured HTTP channel. Subclasses set :attr:`integration`, implement
    :meth:`request`, and where the provider needs it set :attr:`result_code` or override
    :meth:`verdict`/:meth:`detail`; they never catch errors themselves."""

    integration: ClassVar[str]
    credential: ClassVar[str] = "secret file"
    """What an ``OSError`` while building the request means: the credential file named here
    could not be read (retried, the file may come back)."""
    result_code: ClassVar[ResultCode | None] = None
    """The provider's verdict inside a 2xx answer; None: the status alone decides."""

    def __init__(self, config: C, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.clock = clock
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                trust_env=False,
                proxy=self.config.proxy_url,
                timeout=self.config.timeout,
                **self.config.http.client_args(),
            )
        return self._client

    async def notify(
        self, payload: Mapping[str, Any], idempotency_key: str | None = None
    ) -> Outcome:
        group = self.select(payload)
        if group is None:
            return Outcome.ok()  # nothing to say: a resolved-only group, resolved muted
        return await self.deliver(group, idempotency_key)

    def select(self, payload: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The payload to announce, without resolved alerts if the receiver does not want them
        and cut to ``max_alerts``; None when nothing is left to send."""
        kept = payload if self.config.send_resolved else without_resolved(payload)
        return None if kept is None else truncate(kept, self.config.max_alerts)

    async def deliver(self, group: Mapping[str, Any], idempotency_key: str | None) -> Outcome:
        """Send one group in one attempt (Telegram adds a plain-text second try)."""
        return await self.attempt(lambda: self.request(group, idempotency_key))

    def request(self, group: Mapping[str, Any], idempotency_key: str | None) -> Post:
        """The provider's request for ``group``; may read credential files (``OSError``)."""
        raise NotImplementedError

    def verdict(self, resp: httpx.Response) -> Outcome:
        """The verdict on a 2xx answer: :attr:`result_code` when the provider has one."""
        if self.result_code is None:
            return Outcome.ok(resp.status_code)
        return self.result_code.outcome(self.integration, resp.content, resp.status_code)

    def detail(self, resp: httpx.Response) -> str:
        """What a failure reason quotes of a non-2xx answer."""
        return resp.text[:DETAIL_CHARS]

    async def attempt(self, build: Callable[[], Post]) -> Outcome:
        """One attempt: build the request, post it, judge the answer. A 2xx answer is judged
        by :meth:`verdict`; any other status by :func:`classify_http` (``Retry-After`` and body
        hints honoured), with :meth:`detail` in the redacted reason. Transport errors are
        classified and an unreadable credential file retries: nothing is raised. The
        receiver's ``http_config`` credentials go in ``Authorization`` unless the provider's
        own request already carries one (its token wins)."""
        http = self.config.http
        try:
            post = build()
            headers = dict(post.headers or {})
            authorization = http.authorization()  # http_config's files are read now too
            if authorization is not None:
                headers.setdefault("Authorization", authorization)
            resp = await self._http().post(
                post.url,
                content=post.content,
                data=post.form,
                params=post.params,
                headers=headers,
                extensions=http.extensions(),
            )
        except OSError as exc:
            return Outcome.retry(f"{self.integration}: {self.credential}: {type(exc).__name__}")
        except httpx.HTTPError as exc:
            return classify_exception(exc)
        if 200 <= resp.status_code < 300:
            return self.verdict(resp)
        out = classify_http(resp.status_code, resp.content, resp.headers, self.clock.time())
        detail = self.detail(resp)
        reason = f"{self.integration}: {out.reason}" + (f": {detail}" if detail else "")
        return Outcome(out.kind, redact(reason), out.retry_after, out.status)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def optional_secret(value: str | None, path: Path | None) -> str | None:
    """:func:`secret_or_file` for a credential that may be absent (None when neither is set)."""
    return None if value is None and path is None else secret_or_file(value, path)


__all__ = [
    "DETAIL_CHARS",
    "HttpChannel",
    "Post",
    "ResultCode",
    "error_text",
    "json_body",
    "json_post",
    "optional_secret",
    "secret_or_file",  # from .httpconfig, where http_config's own credentials are read too
]
