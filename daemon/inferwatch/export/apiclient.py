"""The CLI's side of the HTTP API (``inferwatch status``, ``inferwatch silence``): where the
daemon is and how to prove who we are to it.

The URL is ``--url`` (or ``$INFERWATCH_URL``), else ``http://`` and ``--listen``. Credentials
and TLS trust come from an ``--http.config.file`` (or ``$INFERWATCH_HTTP_CONFIG_FILE``) in the
format amtool's ``--http.config.file`` reads, Prometheus's HTTP client config: ``basic_auth``
(``username``, ``password`` or ``password_file``), ``authorization``, ``tls_config``
(``ca_file``, ``cert_file``/``key_file``, ``server_name``, ``insecure_skip_verify``),
``proxy_url``, ``follow_redirects``. So one file serves amtool and inferwatch alike.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from inferwatch.config.loader import read_text
from inferwatch.config.yamlpos import format_loc, load_located
from inferwatch.errors import ConfigError, Problem
from inferwatch.notify.channels.common import CommonOptions, common_from_mapping
from inferwatch.notify.channels.httpconfig import NO_HTTP_CONFIG, HttpClientConfig
from inferwatch.notify.channels.keys import describe, unread_keys

URL_ENV = "INFERWATCH_URL"
HTTP_CONFIG_ENV = "INFERWATCH_HTTP_CONFIG_FILE"


@dataclass(frozen=True, slots=True)
class ApiTarget:
    """The daemon's base URL and the client settings to reach it."""

    base: str
    http: HttpClientConfig = NO_HTTP_CONFIG
    proxy_url: str | None = None
    timeout: float = 10.0
    headers: Mapping[str, str] = field(default_factory=dict)

    def client(self) -> httpx.Client:
        """A client whose every request carries the credentials (files read now)."""
        headers = dict(self.headers)
        authorization = self.http.authorization()
        if authorization is not None:
            headers["Authorization"] = authorization
        return httpx.Client(
            base_url=self.base,
            headers=headers,
            timeout=self.timeout,
            trust_env=False,
            proxy=self.proxy_url,
            **self.http.client_args(),
        )

    def extensions(self) -> dict[str, Any]:
        return self.http.extensions()


def load_http_config(path: str) -> CommonOptions:
    """An amtool-style HTTP client config file (and inferwatch's ``timeout``); a ConfigError
    names each problem at ``PATH:LINE:COL``."""
    located = load_located(read_text(path), path)
    if located.problems:
        raise ConfigError(located.problems)
    data = located.data or {}
    if not isinstance(data, Mapping):
        raise ConfigError([Problem(path, 1, 1, "", "the file must be a mapping of keys")])
    try:
        unread = unread_keys(lambda raw: common_from_mapping({"http_config": raw}), data)
        options = common_from_mapping({"http_config": data})
    except ValueError as exc:
        at = tuple(getattr(exc, "at", ("http_config",))[1:])
        line, col = located.position(at)
        raise ConfigError([Problem(path, line, col, format_loc(at), str(exc))]) from None
    problems = [
        Problem(path, *located.position(key), format_loc(key), describe(("http_config", *key)))
        for key in unread
    ]
    if problems:
        raise ConfigError(problems)
    return options


def api_target(listen: str, url: str | None, http_config_file: str | None) -> ApiTarget:
    """Where ``inferwatch status``/``silence`` go: flags first, then the environment."""
    base = url or os.environ.get(URL_ENV) or f"http://{listen}"
    path = http_config_file or os.environ.get(HTTP_CONFIG_ENV)
    if not path:
        return ApiTarget(base.rstrip("/"))
    options = load_http_config(path)
    return ApiTarget(base.rstrip("/"), options.http, options.proxy_url, options.timeout)


__all__ = ["HTTP_CONFIG_ENV", "URL_ENV", "ApiTarget", "api_target", "load_http_config"]
