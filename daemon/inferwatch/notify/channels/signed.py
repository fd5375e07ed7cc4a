"""The optional signing secret of the group robots that sign their requests (DingTalk, Feishu).

Both take ``secret`` inline or in ``secret_file`` (at most one), register it for redaction and
read the file at send time so a rotated secret needs no reload; only the signature itself
differs (each module's ``sign``), and so does where it travels (query string, JSON body).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from inferwatch.notify.channels.common import ChatOptions, check_secret
from inferwatch.notify.channels.http_channel import optional_secret


@dataclass(frozen=True, slots=True, kw_only=True)
class SignedChatOptions(ChatOptions):
    """:class:`ChatOptions` plus the optional signing secret."""

    secret: str | None = None
    secret_file: Path | None = None

    def check_signing(self, kind: str) -> None:
        """For the config's ``__post_init__``: at most one of ``secret`` and ``secret_file``."""
        check_secret(kind, "secret", self.secret, self.secret_file, required=False)

    def signing_secret(self) -> str | None:
        """The secret now (its file read at this send), or None when requests go unsigned."""
        return optional_secret(self.secret, self.secret_file)
