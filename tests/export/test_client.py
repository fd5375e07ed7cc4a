from __future__ import annotations

from inferwatch.export.client import base_url


def test_a_wildcard_listen_is_reached_on_loopback() -> None:
    assert base_url("0.0.0.0:9945") == "http://127.0.0.1:9945"
    assert base_url("[::]:9945") == "http://[::1]:9945"
    assert base_url("[fe80::1]:1") == "http://[fe80::1]:1"
    assert base_url("127.0.0.1:9") == "http://127.0.0.1:9"
