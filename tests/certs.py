"""Test certificates made with the ``openssl`` command: a CA, and leaf certificates it signs
(a server's for 127.0.0.1/localhost, a client's), written into a test's directory."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def make_ca(directory: Path, name: str = "ca") -> Pair:
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed")
    pair = Pair(directory / f"{name}.crt", directory / f"{name}.key")
    _openssl(
        "req", "-x509", *EC, "-keyout", str(pair.key), "-out", str(pair.cert), "-days", "2",
        "-subj", f"/CN=inferwatch test {name}",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    return pair


def make_leaf(directory: Path, ca: Pair, name: str, sans: str, usage: str) -> Pair:
    """A certificate for ``sans`` (``IP:127.0.0.1,DNS:localhost``) signed by ``ca``;
    ``usage`` is ``serverAuth`` or ``clientAuth``."""
    pair = Pair(directory / f"{name}.crt", directory / f"{name}.key")
    csr, ext = directory / f"{name}.csr", directory / f"{name}.ext"
    ext.write_text(
        f"subjectAltName={sans}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\n"
        f"extendedKeyUsage={usage}\nsubjectKeyIdentifier=hash\n"
        "authorityKeyIdentifier=keyid,issuer\n"
    )
    _openssl("req", *EC, "-keyout", str(pair.key), "-out", str(csr), "-subj", f"/CN={name}")
    _openssl(
        "x509", "-req", "-in", str(csr), "-CA", str(ca.cert), "-CAkey", str(ca.key),
        "-CAcreateserial", "-out", str(pair.cert), "-days", "2", "-extfile", str(ext),
    )  # fmt: skip
    return pair


def server_pair(directory: Path, ca: Pair) -> Pair:
    return make_leaf(directory, ca, "server", "IP:127.0.0.1,DNS:localhost", "serverAuth")
