"""Config field types: sizes as Prometheus writes them."""

from __future__ import annotations

import pytest

from inferwatch.config.types import parse_size


@pytest.mark.parametrize(
    ("text", "size"),
    [(2048, 2048), ("512", 512), ("1KB", 1024), ("1KiB", 1024), ("32MB", 32 << 20),
     (" 2 GiB ", 2 << 30), ("10b", 10)],
)  # fmt: skip
def test_sizes(text: object, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "MB", "1.5MB", "-1", "1PB", True, 3.5])
def test_bad_sizes(text: object) -> None:
    with pytest.raises(ValueError, match="size"):
        parse_size(text)
