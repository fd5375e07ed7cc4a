"""Alertmanager's ``http_config`` for every HTTP channel (and the CLI's ``--http.config.file``,
the same format amtool reads): who we are to the receiver and how far we trust it.

* ``authorization`` (``type``, default ``Bearer``; ``credentials`` or ``credentials_file``),
  ``basic_auth`` (``username``/``username_file``, ``password``/``password_file``), and the older
  ``bearer_token``/``bearer_token_file`` that Prometheus's client still accepts: at most one of
  the three. Files are read at each send, so a rotated credential needs no reload; every value
  is registered with the redactor.
* ``tls_config``: ``ca_file`` (or inline ``ca``), ``cert_file``/``key_file`` (a client
  certificate), ``server_name`` (SNI and the name checked), ``insecure_skip_verify``,
  ``min_version``/``max_version``. Files are read when the config is built, so a missing CA is
  a config problem at ``tls_config``.
* ``follow_redirects`` (default true, as Alertmanager); ``proxy_url`` and ``timeout`` are read
  by :func:`.common.common_from_mapping`.

Keys of Alertmanager's that inferwatch lacks (``oauth2``, ``enable_http2``, ``http_headers``,
``proxy_from_environment``…) are refused by ``notify.validate`` (:mod:`.keys`).
"""

from __future__ import annotations

import base64
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inferwatch.config.web import TLS_VERSIONS
from inferwatch.redact import register_secret


class HttpConfigError(ValueError):
    """A bad ``http_config``; ``at`` is the key path under the entry, for the message's place."""

    def __init__(self, message: str, *at: str) -> None:
        super().__init__(message)
        self.at = ("http_config", *at)


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


@dataclass(frozen=True, slots=True)
class Credential:
    """A value given inline or in a file (read at use)."""

    value: str | None = None
    path: Path | None = None

    def read(self) -> str:
        return secret_or_file(self.value, self.path)


def _credential(raw: Mapping[str, Any], name: str, where: str, *at: str) -> Credential | None:
    value, path = raw.get(name), raw.get(f"{name}_file")
    if value is not None and path is not None:
        raise HttpConfigError(f"{where}: at most one of {name} and {name}_file may be set", *at)
    if value is None and path is None:
        return None
    if value is not None:
        if not isinstance(value, str):
            raise HttpConfigError(f"{where}.{name} must be a string", *at, name)
        register_secret(value)
        return Credential(value=value)
    return Credential(path=Path(str(path)))


@dataclass(frozen=True, slots=True)
class TlsClientConfig:
    ca_file: Path | None = None
    ca: str | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    server_name: str | None = None
    insecure_skip_verify: bool = False
    min_version: str | None = None
    max_version: str | None = None

    def context(self) -> ssl.SSLContext:
        """The client's SSL context; ValueError names what could not be loaded."""
        ctx = ssl.create_default_context()
        try:
            if self.ca_file is not None or self.ca is not None:
                ctx.load_verify_locations(cafile=self.ca_file, cadata=self.ca)
            if self.cert_file is not None:
                ctx.load_cert_chain(self.cert_file, self.key_file)
        except (OSError, ssl.SSLError) as exc:
            why = exc.reason if isinstance(exc, ssl.SSLError) else exc.strerror
            raise HttpConfigError(
                f"tls_config: cannot load a certificate: {why or exc}", "tls_config"
            ) from None
        if self.min_version is not None:
            ctx.minimum_version = TLS_VERSIONS[self.min_version]
        if self.max_version is not None:
            ctx.maximum_version = TLS_VERSIONS[self.max_version]
        if self.insecure_skip_verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        return ctx


def _tls(raw: Mapping[str, Any]) -> TlsClientConfig:
    for key in ("cert", "key"):
        if raw.get(key) is not None:
            raise HttpConfigError(
                f"tls_config.{key}: inline PEM is not supported (Python's ssl loads files): use "
                f"{key}_file",
                "tls_config",
                key,
            )
    if (raw.get("cert_file") is None) != (raw.get("key_file") is None):
        raise HttpConfigError("tls_config: cert_file and key_file go together", "tls_config")
    for key in ("min_version", "max_version"):
        if raw.get(key) is not None and raw.get(key) not in TLS_VERSIONS:
            raise HttpConfigError(
                f"tls_config.{key} must be one of {', '.join(TLS_VERSIONS)}", "tls_config", key
            )
    path = {
        k: Path(str(raw[k])) if raw.get(k) else None for k in ("ca_file", "cert_file", "key_file")
    }
    skip = raw.get("insecure_skip_verify", False)
    if not isinstance(skip, bool):
        raise HttpConfigError(
            "tls_config.insecure_skip_verify must be true or false",
            "tls_config",
            "insecure_skip_verify",
        )
    tls = TlsClientConfig(
        ca=raw.get("ca"),
        server_name=raw.get("server_name"),
        insecure_skip_verify=skip,
        min_version=raw.get("min_version"),
        max_version=raw.get("max_version"),
        **path,
    )
    tls.context()  # a missing or bad file is a config problem now, not at the first alert
    return tls


@dataclass(frozen=True, slots=True)
class HttpClientConfig:
    """How a channel authenticates and what it trusts; the default sends nothing extra."""

    scheme: str | None = None  # the Authorization type: Basic, Bearer, or another
    username: Credential | None = None
    password: Credential | None = None
    credentials: Credential | None = None
    tls: TlsClientConfig | None = None
    follow_redirects: bool = True

    def authorization(self) -> str | None:
        """The ``Authorization`` header, files read now (``OSError`` if one cannot be)."""
        if self.scheme is None:
            return None
        if self.scheme == "Basic":
            user = self.username.read() if self.username else ""
            password = self.password.read() if self.password else ""
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            register_secret(token)
            return f"Basic {token}"
        assert self.credentials is not None
        return f"{self.scheme} {self.credentials.read()}"

    def client_args(self) -> dict[str, Any]:
        """Keyword arguments for ``httpx.AsyncClient``/``httpx.Client``."""
        verify: ssl.SSLContext | bool = self.tls.context() if self.tls is not None else True
        return {"verify": verify, "follow_redirects": self.follow_redirects}

    def extensions(self) -> dict[str, Any]:
        """Per-request httpx extensions: the TLS server name, when one is set."""
        if self.tls is None or not self.tls.server_name:
            return {}
        return {"sni_hostname": self.tls.server_name}


NO_HTTP_CONFIG = HttpClientConfig()


def parse_http_config(raw: Mapping[str, Any] | None) -> HttpClientConfig:
    """An ``http_config`` mapping (None: the defaults); ValueError names the key at fault."""
    if not raw:
        return NO_HTTP_CONFIG
    basic = raw.get("basic_auth")
    auth = raw.get("authorization")
    bearer = _credential(raw, "bearer_token", "http_config")
    if sum(x is not None for x in (basic, auth, bearer)) > 1:
        raise HttpConfigError(
            "http_config: at most one of basic_auth, authorization and bearer_token may be set"
        )
    scheme: str | None = None
    username = password = credentials = None
    if basic is not None:
        if not isinstance(basic, Mapping):
            raise HttpConfigError("http_config.basic_auth must be a mapping", "basic_auth")
        scheme = "Basic"
        username = _credential(basic, "username", "basic_auth", "basic_auth")
        password = _credential(basic, "password", "basic_auth", "basic_auth")
    elif auth is not None:
        if not isinstance(auth, Mapping):
            raise HttpConfigError("http_config.authorization must be a mapping", "authorization")
        scheme = str(auth.get("type") or "Bearer")
        if scheme.lower() == "basic":
            raise HttpConfigError(
                "http_config.authorization: type Basic is not allowed: use basic_auth",
                "authorization",
                "type",
            )
        credentials = _credential(auth, "credentials", "authorization", "authorization")
        if credentials is None:
            raise HttpConfigError(
                "http_config.authorization needs credentials or credentials_file", "authorization"
            )
    elif bearer is not None:
        scheme, credentials = "Bearer", bearer
    tls_raw = raw.get("tls_config")
    if tls_raw is not None and not isinstance(tls_raw, Mapping):
        raise HttpConfigError("http_config.tls_config must be a mapping", "tls_config")
    follow = raw.get("follow_redirects", True)
    if not isinstance(follow, bool):
        raise HttpConfigError(
            "http_config.follow_redirects must be true or false", "follow_redirects"
        )
    return HttpClientConfig(
        scheme=scheme,
        username=username,
        password=password,
        credentials=credentials,
        tls=_tls(tls_raw) if tls_raw is not None else None,
        follow_redirects=follow,
    )


__all__ = [
    "NO_HTTP_CONFIG",
    "Credential",
    "HttpClientConfig",
    "HttpConfigError",
    "TlsClientConfig",
    "parse_http_config",
    "secret_or_file",
]
