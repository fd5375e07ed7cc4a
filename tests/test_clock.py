from __future__ import annotations

import pytest

from inferwatch.clock import SYSTEM_CLOCK, FakeClock


def test_fake_clock_moves_only_when_told() -> None:
    clock = FakeClock(100.0)
    assert clock.time() == 100.0
    mono = clock.monotonic()
    clock.advance(2.5)
    assert clock.time() == 102.5
    assert clock.monotonic() == mono + 2.5


def test_fake_clock_refuses_to_go_back_but_can_jump() -> None:
    clock = FakeClock(100.0)
    with pytest.raises(ValueError):
        clock.advance(-1)
    mono = clock.monotonic()
    clock.set(50.0)  # an NTP step back: wall time jumps, monotonic does not
    assert clock.time() == 50.0
    assert clock.monotonic() == mono


def test_system_clock_is_sane() -> None:
    assert SYSTEM_CLOCK.time() > 1.7e9
    a = SYSTEM_CLOCK.monotonic()
    assert SYSTEM_CLOCK.monotonic() >= a
