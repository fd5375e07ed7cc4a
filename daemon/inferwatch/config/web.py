"""The ``web:`` section: TLS and basic authentication for the HTTP server, in the Prometheus
exporter-toolkit's web-config format (the same keys, so one ``web-config.yml`` serves
node_exporter and inferwatch; it may also be given as its own file, ``--web.config.file``).

What Python's ``ssl`` module can do is implemented; what it cannot (Go cipher-suite and curve
names, inline PEM certificates, client certificates requested but not verified) is refused at
its key, never ignored. Relative file names are read from the directory of the file that names
them (exporter-toolkit's rule), whichever file that is. A certificate or key that cannot be
loaded is a config problem at ``tls_server_config``, found by ``inferwatch check`` already.
"""

from __future__ import annotations

import re
import ssl
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from inferwatch.redact import register_secret

BASE_DIR = "base_dir"
"""The validation-context key holding the directory relative file names are read from."""

_BCRYPT = re.compile(r"^\$2[abxy]?\$\d{2}\$[./A-Za-z0-9]{53}$")
TLS_VERSIONS: dict[str, ssl.TLSVersion] = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
TlsVersionName = Literal["TLS10", "TLS11", "TLS12", "TLS13"]
VERIFY_MODES: dict[str, ssl.VerifyMode] = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
_UNVERIFIED = ("RequestClientCert", "RequireAnyClientCert")


def _refuse(why: str) -> Any:
    """A field validator refusing any value of a key exporter-toolkit has and inferwatch lacks."""

    def check(value: Any) -> Any:
        if value is not None:
            raise ValueError(f"not supported by inferwatch: {why}")
        return value

    return check


def _resolve(value: Path | None, info: ValidationInfo) -> Path | None:
    base = (info.context or {}).get(BASE_DIR)
    if value is None or value.is_absolute() or base is None:
        return value
    return Path(base) / value


def _bcrypt_hash(value: str) -> str:
    if not _BCRYPT.match(value):
        raise ValueError(
            "expected a bcrypt hash ($2y$10$ and 53 more characters, from `htpasswd -nBC 10 "
            'USER` or python3 -c \'import bcrypt; print(bcrypt.hashpw(b"PASSWORD", '
            "bcrypt.gensalt()).decode())'), not a password"
        )
    register_secret(value)
    return value


BcryptHash = Annotated[str, AfterValidator(_bcrypt_hash)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TlsServerConfig(_Strict):
    cert_file: Path
    key_file: Path
    client_auth_type: str = "NoClientCert"
    client_ca_file: Path | None = None
    client_allowed_sans: list[str] = Field(default_factory=list)
    min_version: TlsVersionName = "TLS12"
    max_version: TlsVersionName = "TLS13"
    prefer_server_cipher_suites: bool = True
    cert: Any = None
    key: Any = None
    client_ca: Any = None
    cipher_suites: Any = None
    curve_preferences: Any = None

    _paths = field_validator("cert_file", "key_file", "client_ca_file")(_resolve)
    _cert = field_validator("cert", "key")(
        _refuse("inline PEM (Python's ssl loads files): use cert_file and key_file")
    )
    _ca = field_validator("client_ca")(
        _refuse("inline PEM (Python's ssl loads files): use client_ca_file")
    )
    _ciphers = field_validator("cipher_suites", "curve_preferences")(
        _refuse("Go's cipher and curve names; OpenSSL's defaults for the allowed versions apply")
    )

    @field_validator("client_auth_type")
    @classmethod
    def _auth_type(cls, value: str) -> str:
        if value in _UNVERIFIED:
            raise ValueError(
                f"not supported: {value} (Python's ssl cannot ask for a client certificate "
                "without verifying it: use VerifyClientCertIfGiven or RequireAndVerifyClientCert "
                "with client_ca_file)"
            )
        if value not in VERIFY_MODES:
            raise ValueError(
                f"unknown client_auth_type {value!r}; known: {', '.join(VERIFY_MODES)}"
            )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> TlsServerConfig:
        verifies = self.client_auth_type != "NoClientCert"
        if verifies and self.client_ca_file is None:
            raise ValueError(f"client_auth_type {self.client_auth_type} needs client_ca_file")
        if self.client_ca_file is not None and not verifies:
            raise ValueError(
                "client_ca_file is set but client_auth_type is NoClientCert: set "
                "client_auth_type: RequireAndVerifyClientCert to check client certificates"
            )
        if self.client_allowed_sans and self.client_auth_type != "RequireAndVerifyClientCert":
            raise ValueError(
                "client_allowed_sans needs client_auth_type RequireAndVerifyClientCert"
            )
        if TLS_VERSIONS[self.min_version] > TLS_VERSIONS[self.max_version]:
            raise ValueError(f"min_version {self.min_version} is above max_version")
        server_context(self)  # a certificate or key that cannot be loaded is a config problem
        return self


def server_context(tls: TlsServerConfig) -> ssl.SSLContext:
    """The server's SSL context; ValueError names the file that could not be loaded."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = TLS_VERSIONS[tls.min_version]
    ctx.maximum_version = TLS_VERSIONS[tls.max_version]
    if tls.prefer_server_cipher_suites:
        ctx.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    try:
        ctx.load_cert_chain(tls.cert_file, tls.key_file)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(
            f"cannot load cert_file {tls.cert_file} with key_file {tls.key_file}: {_why(exc)}"
        ) from None
    ctx.verify_mode = VERIFY_MODES[tls.client_auth_type]
    if tls.client_ca_file is not None:
        try:
            ctx.load_verify_locations(cafile=tls.client_ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(
                f"cannot load client_ca_file {tls.client_ca_file}: {_why(exc)}"
            ) from None
    return ctx


def _why(exc: OSError | ssl.SSLError) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    return exc.strerror or str(exc)


class WebConfig(_Strict):
    """exporter-toolkit's web-config: ``tls_server_config`` and ``basic_auth_users``
    (user name → bcrypt hash)."""

    tls_server_config: TlsServerConfig | None = None
    basic_auth_users: dict[str, BcryptHash] = Field(default_factory=dict)
    http_server_config: Any = None
    rate_limit: Any = None

    _http = field_validator("http_server_config")(
        _refuse("HTTP/2 and extra response headers are not implemented")
    )
    _rate = field_validator("rate_limit")(
        _refuse("requests are not rate-limited; connections are capped (see the README)")
    )

    @field_validator("basic_auth_users")
    @classmethod
    def _users(cls, users: dict[str, BcryptHash]) -> dict[str, BcryptHash]:
        if "" in users:
            raise ValueError("a user name cannot be empty")
        return users

    @property
    def auth_enabled(self) -> bool:
        return bool(self.basic_auth_users)


__all__ = ["BASE_DIR", "TlsServerConfig", "WebConfig", "server_context"]
