"""The one-expression reading of vLLM V1's stats and Gen 3 SpecDecoding lines gives exactly the
record of the general, field-by-name reading, or declines (and the general path reads the line).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inferwatch.parsers import vllm
from inferwatch.parsers.engine_prefix import EMPTY_PREFIX, split_prefix
from inferwatch.parsers.engine_records import EngineRecord
from inferwatch.parsers.vllm_fast import v1_spec, v1_stats

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# Numbers as engines print them, and as they might: the fast path takes plain digits only.
PLAIN = st.from_regex(r"\d{1,7}(\.\d{1,4})?", fullmatch=True)
ODD = st.sampled_from(["nan", "inf", "1,024.5", "1e3", "-1.0", ".5", "7.", "12x", " 3.0"])
NUMBER = PLAIN | ODD
INT = st.from_regex(r"\d{1,9}", fullmatch=True) | st.sampled_from(["1,024", "-3", "nan"])
END = st.sampled_from(["", ".", " ", "\n", " .\r\n", ",", " (x)"])


def _plain(number: str) -> bool:
    return re.fullmatch(r"\d+(\.\d+)?", number) is not None


def general(body: str) -> EngineRecord | None:
    """The general path alone: the fast readers declining everything."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(vllm, "v1_stats", lambda *_: None)
        mp.setattr(vllm, "v1_spec", lambda *_: None)
        if "SpecDecoding" in body:
            return vllm.parse_spec(EMPTY_PREFIX, body)
        return vllm.parse_stats(EMPTY_PREFIX, body)


def fast(body: str) -> EngineRecord | None:
    if "SpecDecoding" in body:
        return v1_spec(EMPTY_PREFIX, body, body.find("SpecDecoding metrics: "))
    return v1_stats(EMPTY_PREFIX, body)


def _agree(body: str) -> EngineRecord | None:
    """The fast record (None: declined), after checking it against the general one."""
    quick = fast(body)
    if quick is not None:
        assert quick == general(body), body
    assert (vllm.parse_spec if "SpecDecoding" in body else vllm.parse_stats)(
        EMPTY_PREFIX, body
    ) == general(body)
    return quick


@given(
    st.one_of(st.none(), st.from_regex(r"\d{1,9}", fullmatch=True)),
    st.lists(NUMBER, min_size=4, max_size=4),
    st.lists(INT, min_size=2, max_size=2),
    END,
)
def test_stats_lines_read_alike(
    engine: str | None, floats: list[str], ints: list[str], end: str
) -> None:
    prompt, gen, kv, hit = floats
    running, waiting = ints
    body = (
        ("" if engine is None else f"Engine {engine}: ")
        + f"Avg prompt throughput: {prompt} tokens/s, Avg generation throughput: {gen} tokens/s, "
        + f"Running: {running} reqs, Waiting: {waiting} reqs, GPU KV cache usage: {kv}%, "
        + f"Prefix cache hit rate: {hit}%{end}"
    )
    quick = _agree(body)
    plain = all(map(_plain, floats))
    common = plain and all(x.isdigit() for x in ints) and end.strip(" .\r\n") == ""
    if common and (engine is None or len(engine) <= 8):
        assert quick is not None, body  # the common shape is taken by the fast path


@given(st.lists(NUMBER, min_size=4, max_size=4), st.lists(INT, min_size=2, max_size=2),
       st.lists(NUMBER, min_size=1, max_size=8), END, st.sampled_from(["", "x ", "Engine 000: "]))  # fmt: skip
def test_spec_lines_read_alike(
    floats: list[str], ints: list[str], positions: list[str], end: str, lead: str
) -> None:
    mal, acc_tps, draft_tps, rate = floats
    accepted, drafted = ints
    body = (
        f"{lead}SpecDecoding metrics: Mean acceptance length: {mal}, "
        f"Accepted throughput: {acc_tps} tokens/s, Drafted throughput: {draft_tps} tokens/s, "
        f"Accepted: {accepted} tokens, Drafted: {drafted} tokens, "
        f"Per-position acceptance rate: {', '.join(positions)}, "
        f"Avg Draft acceptance rate: {rate}%{end}"
    )
    quick = _agree(body)
    plain = all(map(_plain, floats + positions))
    if plain and all(x.isdigit() for x in ints) and end.strip(" .\r\n") == "":
        assert quick is not None, body


def _bodies(path: Path) -> list[str]:
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if "Avg prompt throughput" in line or "SpecDecoding metrics" in line:
            out.append(split_prefix(line)[1])
    return out


def test_captured_lines_read_alike() -> None:
    """Every stats and SpecDecoding line of the real captures: the same record either way."""
    files = sorted((FIXTURES / "corpus").glob("*.txt")) + sorted(
        (FIXTURES / "signal").glob("*.log")
    )
    bodies = [b for f in files for b in _bodies(f)]
    taken = [b for b in bodies if _agree(b) is not None]
    assert len(bodies) > 20 and taken  # some real lines do take the fast path
