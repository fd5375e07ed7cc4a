"""Basic auth for the HTTP server: header parsing, bcrypt off the loop, the verdict cache."""

from __future__ import annotations

import asyncio
import base64

import bcrypt
import pytest

from inferwatch.export.webauth import BasicAuth, parse_basic, peer_names

HASH = bcrypt.hashpw(b"right horse", bcrypt.gensalt(rounds=4)).decode()


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.mark.parametrize(
    ("header", "parsed"),
    [
        (basic("alice", "pw:with:colons"), ("alice", "pw:with:colons")),
        ("basic " + base64.b64encode(b"a:").decode(), ("a", "")),
        (None, None),
        ("", None),
        ("Bearer abc", None),
        ("Basic !!!notbase64", None),
        ("Basic " + base64.b64encode(b"no colon").decode(), None),
        ("Basic " + base64.b64encode(b"\xff\xfe:x").decode(), None),
    ],
)
def test_parse_basic(header: str | None, parsed: tuple[str, str] | None) -> None:
    assert parse_basic(header) == parsed


def test_right_wrong_and_unknown() -> None:
    auth = BasicAuth({"alice": HASH})

    async def main() -> list[bool]:
        return [
            await auth.allows(basic("alice", "right horse")),
            await auth.allows(basic("alice", "wrong horse")),
            await auth.allows(basic("bob", "right horse")),
            await auth.allows(basic("alice", "x" * 100)),  # beyond bcrypt's 72 bytes
            await auth.allows(None),
        ]

    assert asyncio.run(main()) == [True, False, False, False, False]


def test_a_flood_with_one_password_costs_one_bcrypt_check() -> None:
    auth = BasicAuth({"alice": HASH})

    async def main() -> list[bool]:
        first = [await auth.allows(basic("alice", "right horse"))]
        rest = await asyncio.gather(
            *(auth.allows(basic("alice", "right horse")) for _ in range(200))
        )
        wrong = [await auth.allows(basic("alice", "nope")) for _ in range(50)]
        return first + list(rest) + wrong

    verdicts = asyncio.run(main())
    assert verdicts == [True] * 201 + [False] * 50
    assert auth.bcrypt_checks == 2  # one for the right password, one for the wrong one


def test_the_cache_is_bounded() -> None:
    auth = BasicAuth({"alice": HASH}, cache_size=3)

    async def main() -> None:
        for i in range(5):
            await auth.allows(basic("alice", f"guess {i}"))
        await auth.allows(basic("alice", "guess 0"))  # pushed out: checked again

    asyncio.run(main())
    assert auth.bcrypt_checks == 6


def test_peer_names() -> None:
    cert = {"subjectAltName": (("DNS", "scraper.example"), ("IP Address", "10.0.0.9"))}
    assert peer_names(cert) == {"scraper.example", "10.0.0.9"}
    assert peer_names(None) == set() and peer_names({}) == set()
