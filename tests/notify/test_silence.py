from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path

import pytest

from inferwatch.clock import FakeClock
from inferwatch.config.models import SilenceFile
from inferwatch.labels import make_labels
from inferwatch.notify.matchers import parse_list
from inferwatch.notify.silence import (
    FlagFile,
    Silence,
    SilenceError,
    Silencer,
    Silences,
    SilenceState,
)
from inferwatch.notify.stages import Muter

T0 = 1_700_000_000.0
MAIN = make_labels({"alertname": "EngineDown", "engine": "main"})
AUX = make_labels({"alertname": "EngineDown", "engine": "aux"})


def silence(
    matchers: list[str] | None = None, start: float = T0, end: float = T0 + 3600
) -> Silence:
    return Silence(
        id="",
        matchers=parse_list(matchers or ['engine="main"']),
        starts_at=start,
        ends_at=end,
        created_by="owner",
        comment="model swap",
    )


def store() -> Silences:
    counter = itertools.count(1)
    return Silences(new_id=lambda: f"s{next(counter)}")


@pytest.mark.parametrize(
    ("offset", "state", "muted"),
    [
        (-1, SilenceState.PENDING, False),
        (0, SilenceState.ACTIVE, True),
        (3599, SilenceState.ACTIVE, True),
        (3600, SilenceState.EXPIRED, False),
    ],
)
def test_states(offset: float, state: SilenceState, muted: bool) -> None:
    s = silence()
    assert s.state(T0 + offset) is state
    assert s.mutes(MAIN, T0 + offset) is muted
    assert not s.mutes(AUX, T0 + offset)


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"matchers": ()}, "at least one matcher"),
        ({"matchers": parse_list(['engine=~".*"'])}, "empty label set"),
        ({"ends_at": T0}, "end after"),
        ({"comment": " "}, "comment"),
        ({"created_by": ""}, "created_by"),
    ],
)
def test_invalid(change: dict[str, object], fragment: str) -> None:
    with pytest.raises(SilenceError, match=fragment):
        store().add(replace(silence(), **change))  # type: ignore[arg-type]


def test_add_expire_gc() -> None:
    clock = FakeClock(T0)
    sil = store()
    a = sil.add(silence())
    b = sil.add(silence(['engine="aux"'], start=T0 + 600))
    assert (a.id, b.id) == ("s1", "s2")
    assert sil.muted_by(MAIN, clock.time()) == ["s1"]
    clock.advance(60)
    assert sil.expire("s1", clock.time()).state(clock.time()) is SilenceState.EXPIRED
    assert not sil.mutes(MAIN, clock.time())
    pending = sil.expire("s2", clock.time())  # a pending silence expires without ever acting
    assert pending.starts_at == pending.ends_at == clock.time()
    with pytest.raises(SilenceError, match="no silence"):
        sil.expire("nope", clock.time())
    clock.advance(86400)
    assert sil.gc(clock.time(), retention=86400) == 2
    assert sil.all() == []


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    sil = store()
    sil.add(silence(['engine=~"main|aux"', "gpu!=3", 'x!~"y.*"']))
    path = tmp_path / "state" / "silences.json"
    sil.save(path)
    doc = json.loads(path.read_text())
    assert doc["silences"][0]["matchers"][0] == {
        "name": "engine",
        "value": "main|aux",
        "isRegex": True,
        "isEqual": True,
    }
    again = Silences()
    assert again.load(path) == 1
    assert again.all() == sil.all()
    assert again.mutes(AUX, T0 + 1)


def test_load_missing_is_empty(tmp_path: Path) -> None:
    assert Silences().load(tmp_path / "none.json") == 0


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{not json", "cannot read silences"),
        ('{"version": 2, "silences": []}', "unknown version"),
        ('{"version": 1}', "invalid silences file"),
        ('{"version": 1, "silences": [{"id": "x"}]}', "invalid silences file"),
        ("[]", "invalid silences file"),
        (
            '{"version": 1, "silences": [{"id": "x", "startsAt": 0, "endsAt": 1, "createdBy": "a",'
            ' "comment": "c", "matchers": [{"name": "a", "value": "(", "isRegex": true,'
            ' "isEqual": true}]}]}',
            "invalid silences file",
        ),
        (
            '{"version": 1, "silences": [{"id": "x", "startsAt": 5, "endsAt": 1, "createdBy": "a",'
            ' "comment": "c", "matchers": [{"name": "a", "value": "b", "isRegex": false,'
            ' "isEqual": true}]}]}',
            "must end after",
        ),
    ],
)
def test_load_errors(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "silences.json"
    path.write_text(content)
    with pytest.raises(SilenceError, match=fragment) as info:
        Silences().load(path)
    assert str(path) in str(info.value) or "version" in str(info.value)


def test_flag_file(tmp_path: Path) -> None:
    flag = tmp_path / "maintenance"
    cfg = SilenceFile(path=flag, matchers=['engine="main"'], comment="swap")
    files = [FlagFile.from_config(cfg), FlagFile.from_config(SilenceFile(path=tmp_path / "all"))]
    silencer: Muter = Silencer(store(), files)
    assert not silencer.mutes(MAIN, T0)
    flag.touch()
    assert silencer.mutes(MAIN, T0) and not silencer.mutes(AUX, T0)
    assert isinstance(silencer, Silencer)
    assert silencer.muted_by(MAIN, T0) == [f"file:{flag}"]
    (tmp_path / "all").touch()  # no matchers: every alert
    assert silencer.mutes(AUX, T0)
    flag.unlink()
    (tmp_path / "all").unlink()
    assert not silencer.mutes(MAIN, T0)


def test_silencer_combines() -> None:
    sil = store()
    sil.add(silence())
    silencer = Silencer(sil)
    assert silencer.muted_by(MAIN, T0) == ["s1"] and silencer.mutes(MAIN, T0)
    assert not silencer.mutes(AUX, T0)
