"""Basic authentication for the HTTP server, as exporter-toolkit does it: user → bcrypt hash,
checked on every endpoint.

bcrypt is slow on purpose (tens of milliseconds per check), so:

* a check runs in a worker thread, never on the event loop, and at most ``parallel`` at once;
* a verdict is cached (bounded, least recently used first out) under an HMAC of the user name
  and password with a key made at start, so a scraper presenting the right password every few
  seconds costs one bcrypt per process, and a flood repeating one wrong password costs one too;
* an unknown user is checked against a dummy hash, so the time taken does not say which user
  names exist. bcrypt compares in constant time; the cache is keyed by an unpredictable digest.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import functools
import hashlib
import hmac
import os
from collections import OrderedDict
from collections.abc import Mapping

import bcrypt

CACHE_SIZE = 1024
PARALLEL = 2


@functools.cache
def _dummy() -> bytes:
    """A valid hash of a random password nobody knows, checked for unknown users: made once per
    process, by the first :class:`BasicAuth` (a daemon without basic auth never pays for it)."""
    return bcrypt.hashpw(os.urandom(16).hex().encode(), bcrypt.gensalt(rounds=10))


def parse_basic(header: str | None) -> tuple[str, str] | None:
    """The user name and password of an ``Authorization: Basic`` header, or None."""
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, sep, password = decoded.partition(":")
    return (user, password) if sep else None


class BasicAuth:
    """The users of one config; a reload makes a new one (and so a fresh cache)."""

    def __init__(
        self, users: Mapping[str, str], *, cache_size: int = CACHE_SIZE, parallel: int = PARALLEL
    ) -> None:
        self._users = {user: hashed.encode() for user, hashed in users.items()}
        self._dummy = _dummy()  # before any check, so the first unknown user costs no more
        self._key = os.urandom(32)
        self._cache: OrderedDict[bytes, bool] = OrderedDict()
        self._cache_size = cache_size
        self._slots = asyncio.Semaphore(parallel)
        self.bcrypt_checks = 0  # how many bcrypt comparisons ran (the cache's effect, for tests)

    async def allows(self, header: str | None) -> bool:
        """Whether the ``Authorization`` header names a user with the right password."""
        found = parse_basic(header)
        if found is None:
            return False
        user, password = found
        key = hmac.new(
            self._key, f"{len(user)}:{user}:{password}".encode(), hashlib.sha256
        ).digest()
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        async with self._slots:
            verdict = await asyncio.to_thread(self._check, user, password)
        self._cache[key] = verdict
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return verdict

    def _check(self, user: str, password: str) -> bool:
        self.bcrypt_checks += 1
        stored = self._users.get(user)
        try:
            ok = bcrypt.checkpw(password.encode(), stored or self._dummy)
        except ValueError:  # longer than bcrypt's 72 bytes, or a hash bcrypt cannot read
            ok = False
        return ok and stored is not None


def peer_names(peercert: Mapping[str, object] | None) -> set[str]:
    """The subject alternative names (DNS, IP, e-mail, URI values) of a verified client
    certificate as ``ssl`` reports it; empty without one."""
    if not peercert:
        return set()
    sans = peercert.get("subjectAltName", ())
    return {str(value) for _kind, value in sans} if isinstance(sans, tuple) else set()


__all__ = ["BasicAuth", "parse_basic", "peer_names"]
