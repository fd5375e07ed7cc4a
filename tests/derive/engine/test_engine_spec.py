"""The one MAL formula (derive.engine.spec.mean_acceptance_length) and a line's own MAL."""

from __future__ import annotations

import pytest

from inferwatch.derive.engine.spec import line_mal, mean_acceptance_length
from inferwatch.parsers.engine_prefix import EMPTY_PREFIX
from inferwatch.parsers.engine_records import SpecDecode


def test_accepted_tokens_add_one_per_draft() -> None:
    assert mean_acceptance_length(100.0, accepted=280.0) == pytest.approx(3.8)


def test_emitted_tokens_are_the_mal_themselves_and_win() -> None:
    assert mean_acceptance_length(4.0, emitted=10.0) == 2.5
    assert mean_acceptance_length(4.0, accepted=99.0, emitted=10.0) == 2.5


@pytest.mark.parametrize("drafts", [0.0, -1.0])
def test_nothing_drafted_is_no_mal_not_one(drafts: float) -> None:
    assert mean_acceptance_length(drafts, accepted=0.0) is None
    assert mean_acceptance_length(drafts, emitted=0.0) is None


def test_no_count_is_no_mal() -> None:
    assert mean_acceptance_length(5.0) is None


def test_line_mal_is_printed_or_derived_for_v0_only() -> None:
    v0 = SpecDecode(EMPTY_PREFIX, "vllm_v0", mal=None, accepted=32594, drafted=53716, k=4,
                    cumulative=True, emitted=34244)  # fmt: skip
    assert line_mal(v0) == 2.55
    assert line_mal(v0._replace(emitted=None)) is None
    assert line_mal(v0._replace(drafted=0)) is None
    v1 = SpecDecode(EMPTY_PREFIX, "vllm_v1_gen3", mal=2.2, accepted=10, drafted=30, k=3)
    assert line_mal(v1) == 2.2  # as printed, even where the counts say otherwise
