"""Redaction of registered secrets, including the pieces of a secret URL that travel alone."""

from __future__ import annotations

from inferwatch.redact import MASK, redact, register_secret


def test_a_registered_value_is_masked_wherever_it_appears() -> None:
    register_secret("s3cr3t-value-41")
    assert redact("token s3cr3t-value-41 failed") == f"token {MASK} failed"


def test_a_secret_urls_path_query_and_token_segments_are_masked_alone() -> None:
    url = "https://hooks.example.test/services/T01/B02/Zq8TokenSegment12345?k=QueryValue77"
    register_secret(url)
    assert MASK in redact(f"POST {url} -> 500")
    assert "Zq8TokenSegment12345" not in redact('{"url": "/services/T01/B02/Zq8TokenSegment12345"}')
    assert "Zq8TokenSegment12345" not in redact("segment Zq8TokenSegment12345 echoed")
    assert "QueryValue77" not in redact("k=QueryValue77")
    assert redact("services are fine") == "services are fine"  # short words stay


def test_well_known_query_parameters_are_masked_even_unregistered() -> None:
    text = redact("GET https://api.test/send?access_token=abcdef123&x=1")
    assert "abcdef123" not in text and "x=1" in text
