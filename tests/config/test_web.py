"""The ``web:`` section and ``--web.config.file``: exporter-toolkit's keys, what Python's ssl
cannot do refused at its key, relative files read from the naming file's directory."""

from __future__ import annotations

from pathlib import Path

import bcrypt
import pytest

from certs import make_ca, server_pair
from inferwatch.config.loader import load_web_config
from inferwatch.configfile import load_config, load_with_web
from inferwatch.errors import ConfigError
from inferwatch.redact import redact

HASH = bcrypt.hashpw(b"s3cret-pw", bcrypt.gensalt(rounds=4)).decode()


def problems(path: Path, web: Path | None = None) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_with_web(path, web) if web else load_config(path)
    return [str(p) for p in info.value.problems]


def test_users_with_bcrypt_hashes_load_and_the_hashes_are_redacted(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"web:\n  basic_auth_users:\n    alice: '{HASH}'\n")
    web = load_config(path).web
    assert web is not None and web.auth_enabled and web.basic_auth_users == {"alice": HASH}
    assert HASH not in redact(f"users {HASH}")


def test_a_plain_password_is_refused_at_its_user(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("web:\n  basic_auth_users:\n    alice: hunter2\n")
    [line] = problems(path)
    assert line.startswith(f"{path}:3:5: web.basic_auth_users.alice: expected a bcrypt hash")


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("cipher_suites", "[TLS_AES_128_GCM_SHA256]", "not supported by inferwatch: Go's cipher"),
        ("curve_preferences", "[X25519]", "not supported by inferwatch: Go's cipher"),
        ("cert", "'-----BEGIN'", "inline PEM"),
        ("client_auth_type", "RequireAnyClientCert", "cannot ask for a client certificate"),
        ("client_auth_type", "Sometimes", "unknown client_auth_type 'Sometimes'"),
        ("min_version", "TLS14", "Input should be 'TLS10', 'TLS11', 'TLS12' or 'TLS13'"),
        ("certfile", "x", "unknown key"),
    ],
)
def test_what_python_ssl_cannot_do_is_refused_at_its_key(
    tmp_path: Path, key: str, value: str, says: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "web:\n  tls_server_config:\n    cert_file: s.crt\n    key_file: s.key\n"
        f"    {key}: {value}\n"
    )
    [line] = problems(path)
    assert line.startswith(f"{path}:5:"), line
    assert f"web.tls_server_config.{key}: " in line and says in line, line


def test_other_toolkit_sections_are_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("web:\n  http_server_config: {http2: false}\n  rate_limit: {burst: 5}\n")
    lines = problems(path)
    assert lines[0].startswith(f"{path}:2:3: web.http_server_config: not supported by inferwatch")
    assert lines[1].startswith(f"{path}:3:3: web.rate_limit: not supported by inferwatch")


def test_relative_files_are_read_from_the_config_directory(tmp_path: Path) -> None:
    ca = make_ca(tmp_path)
    server_pair(tmp_path, ca)
    path = tmp_path / "c.yaml"
    path.write_text(
        "web:\n  tls_server_config:\n    cert_file: server.crt\n    key_file: server.key\n"
        "    client_auth_type: RequireAndVerifyClientCert\n    client_ca_file: ca.crt\n"
        "    min_version: TLS13\n"
    )
    web = load_config(path).web
    assert web is not None and web.tls_server_config is not None
    assert web.tls_server_config.cert_file == tmp_path / "server.crt"
    assert web.tls_server_config.client_ca_file == tmp_path / "ca.crt"


def test_a_certificate_that_cannot_be_loaded_is_a_config_problem(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("web:\n  tls_server_config: {cert_file: none.crt, key_file: none.key}\n")
    [line] = problems(path)
    assert line.startswith(f"{path}:2:3: web.tls_server_config: cannot load cert_file ")
    assert str(tmp_path / "none.crt") in line and "No such file" in line


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ("client_auth_type: RequireAndVerifyClientCert", "needs client_ca_file"),
        ("client_ca_file: ca.crt", "client_auth_type is NoClientCert"),
        ("{min_version: TLS13, max_version: TLS12}", "above max_version"),
        ("client_allowed_sans: [a]", "needs client_auth_type RequireAndVerifyClientCert"),
    ],
)
def test_inconsistent_tls_settings_are_refused(tmp_path: Path, extra: str, says: str) -> None:
    path = tmp_path / "c.yaml"
    tls = "{cert_file: s.crt, key_file: s.key, " + extra.strip("{}") + "}"
    path.write_text(f"web:\n  tls_server_config: {tls}\n")
    [line] = problems(path)
    assert says in line, line


def test_a_web_config_file_in_exporter_toolkit_format(tmp_path: Path) -> None:
    ca = make_ca(tmp_path)
    server_pair(tmp_path, ca)
    (tmp_path / "web").mkdir()
    web_file = tmp_path / "web" / "web-config.yml"
    web_file.write_text(
        "tls_server_config:\n  cert_file: ../server.crt\n  key_file: ../server.key\n"
        f"basic_auth_users:\n  prometheus: '{HASH}'\n"
    )
    config = tmp_path / "c.yaml"
    config.write_text("language: en\n")
    web = load_with_web(config, web_file).web
    assert web is not None and web.tls_server_config is not None
    assert web.tls_server_config.key_file == tmp_path / "web" / ".." / "server.key"
    assert web.basic_auth_users == {"prometheus": HASH}
    assert load_web_config(web_file) == web
    web_file.write_text("basic_auth_users:\n  prometheus: plain\n")
    with pytest.raises(ConfigError) as info:
        load_web_config(web_file)
    assert str(info.value.problems[0]).startswith(
        f"{web_file}:2:3: basic_auth_users.prometheus: expected a bcrypt hash"
    )


def test_web_in_both_places_is_refused(tmp_path: Path) -> None:
    web_file = tmp_path / "web.yml"
    web_file.write_text(f"basic_auth_users: {{a: '{HASH}'}}\n")
    config = tmp_path / "c.yaml"
    config.write_text(f"web:\n  basic_auth_users: {{b: '{HASH}'}}\n")
    [line] = problems(config, web_file)
    assert line.startswith(f"{web_file}:1:1: ") and "web: section too" in line
