"""What every HTTP channel shares: its own httpx client (environment proxies ignored unless the
receiver's ``http_config.proxy_url`` names one), the ``send_resolved`` and ``max_alerts``
filters, and closing. Configs inherit :class:`~.common.CommonOptions`.

One base class and one credential reader instead of the same lines in each service's module.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import httpx

from inferwatch.clock import SYSTEM_CLOCK, Clock
from inferwatch.notify.channels.common import CommonOptions
from inferwatch.notify.payload import truncate, without_resolved
from inferwatch.notify.retry import Outcome, classify_exception, classify_http
from inferwatch.redact import redact, register_secret

C = TypeVar("C", bound=CommonOptions)
Request = Callable[[], Awaitable[httpx.Response]]
Verdict = Callable[[httpx.Response], Outcome]


def json_body(body: Any) -> bytes:
    """A JSON request body as the providers expect it: UTF-8, non-ASCII kept as is."""
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


def body_code(content: bytes, code_key: str, text_key: str) -> tuple[int, str] | None:
    """A provider's JSON verdict: its numeric code and message (cut to 200 characters), or
    None when the answer is not that JSON (a captive portal, a proxy page)."""
    try:
        doc = json.loads(content)
        return int(doc[code_key]), str(doc.get(text_key, ""))[:200]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def code_outcome(
    channel: str,
    content: bytes,
    status: int,
    *,
    fields: tuple[str, str],
    ok: int,
    retry: Callable[[int], bool] = lambda code: False,
    pauses: Mapping[int, float] | None = None,
) -> Outcome:
    """The verdict of an answer whose JSON carries a result code (``fields``: the keys of the
    code and of its message). ``ok`` is delivered; a code in ``pauses`` retries after that many
    seconds, one ``retry`` accepts retries at once, any other is permanent. An unreadable
    answer retries: something other than the provider answered."""
    found = body_code(content, *fields)
    if found is None:
        return Outcome.retry(f"{channel}: unreadable answer", status=status)
    code, text = found
    if code == ok:
        return Outcome.ok(status)
    reason = f"{channel}: {fields[0]} {code}: {text}"
    if pauses is not None and code in pauses:
        return Outcome.retry(reason, pauses[code], status)
    if retry(code):
        return Outcome.retry(reason, status=status)
    return Outcome.permanent(reason, status)


def text_head(resp: httpx.Response) -> str:
    return resp.text[:200]


class HttpChannel(Generic[C]):
    integration: ClassVar[str]

    def __init__(self, config: C, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.clock = clock
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                trust_env=False, proxy=self.config.proxy_url, timeout=self.config.timeout
            )
        return self._client

    def _group(self, payload: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The payload to announce, without resolved alerts if the receiver does not want them
        and cut to ``max_alerts``; None when nothing is left to send."""
        kept = payload if self.config.send_resolved else without_resolved(payload)
        return None if kept is None else truncate(kept, self.config.max_alerts)

    async def _attempt(
        self,
        request: Request,
        credential: str,
        *,
        verdict: Verdict | None = None,
        detail: Callable[[httpx.Response], str] = text_head,
    ) -> Outcome:
        """One attempt: ``request`` (which may read a credential file, named ``credential`` in
        the error) and the verdict. A 2xx answer is judged by ``verdict`` (the provider's body
        code) when there is one; any other status by :func:`classify_http`, with ``detail`` of
        the answer in the redacted reason. Transport errors are classified, never raised."""
        try:
            resp = await request()
        except OSError as exc:
            return Outcome.retry(f"{self.integration}: {credential}: {type(exc).__name__}")
        except httpx.HTTPError as exc:
            return classify_exception(exc)
        if verdict is not None and 200 <= resp.status_code < 300:
            return verdict(resp)
        out = classify_http(resp.status_code, resp.content, resp.headers, self.clock.time())
        if not out.reason:
            return out
        reason = redact(f"{self.integration}: {out.reason}: {detail(resp)}")
        return Outcome(out.kind, reason, out.retry_after, out.status)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def secret_or_file(
    value: str | None, path: Path | None, register: Callable[[str], None] = register_secret
) -> str:
    """A credential given inline or as an Alertmanager-style ``*_file`` (read at each send, so a
    rotated token is picked up), registered with the redactor either way."""
    if value is not None:
        return value
    if path is None:
        raise ValueError("neither the value nor its _file is set")
    read = path.read_text(encoding="utf-8").strip()
    register(read)
    return read


def optional_secret(value: str | None, path: Path | None) -> str | None:
    """:func:`secret_or_file` for a credential that may be absent (None when neither is set)."""
    return None if value is None and path is None else secret_or_file(value, path)
