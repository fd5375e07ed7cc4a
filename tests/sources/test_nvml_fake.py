"""The fake NVML module: pynvml's errors and constants, a profile re-read when it changes,
Xid events delivered once to a registered event set."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pynvml
import pytest

from inferwatch.sources.nvml_fake import FakeNvml

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "nvml"


def write(path: Path, doc: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc))
    tmp.replace(path)


@pytest.fixture
def fake(tmp_path: Path) -> FakeNvml:
    path = tmp_path / "p.json"
    shutil.copy(FIXTURES / "host-a-cmp170hx.json", path)
    nv = FakeNvml(path, poll_s=0.001)
    nv.nvmlInit()
    return nv


def test_answers_like_pynvml(fake: FakeNvml) -> None:
    assert fake.nvmlDeviceGetCount() == 2
    h = fake.nvmlDeviceGetHandleByIndex(1)
    assert fake.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM) == 1395
    assert fake.nvmlDeviceGetMemoryInfo(h).total == 8192 * 2**20
    assert fake.nvmlDeviceGetPciInfo(h).busId == "00000000:04:00.0"
    assert fake.nvmlDeviceGetRemappedRows(h) == (0, 0, 0, 0)
    info = pynvml.c_nvmlClockOffset_t()
    info.type = pynvml.NVML_CLOCK_GRAPHICS
    fake.nvmlDeviceGetClockOffsets(h, info)
    assert info.clockOffsetMHz == 250
    assert fake.NVML_CLOCK_MEM == pynvml.NVML_CLOCK_MEM  # constants are pynvml's own
    (temp,) = fake.nvmlDeviceGetFieldValues(h, [pynvml.NVML_FI_DEV_MEMORY_TEMP])
    assert temp.nvmlReturn == pynvml.NVML_SUCCESS


def test_errors_are_pynvml_classes_with_real_codes(fake: FakeNvml) -> None:
    h = fake.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError_NotSupported) as info:
        fake.nvmlDeviceGetNumFans(h)
    assert info.value.value == pynvml.NVML_ERROR_NOT_SUPPORTED == 3
    (recovery,) = fake.nvmlDeviceGetFieldValues(h, [9999])
    assert recovery.nvmlReturn == pynvml.NVML_ERROR_NOT_SUPPORTED


def test_uninitialised_and_unknown_calls(tmp_path: Path) -> None:
    nv = FakeNvml(FIXTURES / "h100-mig.json")
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        nv.nvmlDeviceGetCount()
    nv.nvmlInit()
    with pytest.raises(AttributeError):
        nv.nvmlDeviceSetPowerManagementLimit  # noqa: B018 - the fake only reads


def test_profile_is_re_read_when_it_changes(fake: FakeNvml) -> None:
    doc = json.loads(fake.path.read_text())
    doc["gpus"][0]["lost"] = True
    write(fake.path, doc)
    assert fake.nvmlDeviceGetCount() == 2
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        fake.nvmlDeviceGetHandleByIndex(0)
    doc["gpus"] = doc["gpus"][1:]
    write(fake.path, doc)
    assert fake.nvmlDeviceGetCount() == 1


def test_bad_profile_names_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text('{"gpus": [\n  {"x": 1,}\n]}')
    with pytest.raises(ValueError, match=r"p\.json:2:\d+: "):
        FakeNvml(path).nvmlInit()


def test_xid_events_after_registration_are_delivered_once(fake: FakeNvml) -> None:
    doc = json.loads(fake.path.read_text())
    doc["events"] = [{"gpu": 1, "xid": 31, "id": "old"}]
    write(fake.path, doc)
    events = fake.nvmlEventSetCreate()
    for i in range(2):
        fake.nvmlDeviceRegisterEvents(
            fake.nvmlDeviceGetHandleByIndex(i), pynvml.nvmlEventTypeXidCriticalError, events
        )
    with pytest.raises(pynvml.NVMLError_Timeout):
        fake.nvmlEventSetWait_v2(events, 5)  # what happened before registering is not news
    doc["events"] += [{"gpu": 1, "xid": 79}, {"gpu": 0, "xid": 31}]
    write(fake.path, doc)
    first = fake.nvmlEventSetWait_v2(events, 1000)
    second = fake.nvmlEventSetWait_v2(events, 1000)
    assert (first.device.index, first.eventData) == (1, 79)
    assert (second.device.index, second.eventData) == (0, 31)
    assert first.eventType == pynvml.nvmlEventTypeXidCriticalError
    with pytest.raises(pynvml.NVMLError_Timeout):
        fake.nvmlEventSetWait_v2(events, 5)
    fake.nvmlEventSetFree(events)


def test_a_malformed_answer_names_the_gpu_and_call(fake: FakeNvml) -> None:
    doc = json.loads(fake.path.read_text())
    doc["gpus"][1]["nvmlDeviceGetMemoryInfo"] = 8192
    write(fake.path, doc)
    fake.nvmlDeviceGetCount()
    h = fake.nvmlDeviceGetHandleByIndex(1)
    with pytest.raises(ValueError, match=r"p\.json: gpus\[1\]\.nvmlDeviceGetMemoryInfo: "):
        fake.nvmlDeviceGetMemoryInfo(h)
