"""A kernel message body → the one record it reports, with the cheap triage done once.

The triage (:func:`triage`) looks for the few keywords any parser here needs ("NVRM", "SXid",
the AER/OOM/hung-task words) and says which parser families may match. A caller runs it once on
the raw record, skips everything irrelevant without parsing even the prefix, and hands the
verdict to :func:`parse_kernel_message` with the message body, so no record is pre-checked or
parsed twice on its way to the derivations.
"""

from __future__ import annotations

from enum import IntFlag

from inferwatch.parsers.kernel_misc import MiscRecord, might_be_misc, parse_misc_message
from inferwatch.parsers.xid import GpuRecord, might_be_gpu_record, parse_gpu_message

KernelMessage = GpuRecord | MiscRecord


class Kinds(IntFlag):
    """Which parser families may match a text (none: the text is irrelevant)."""

    NONE = 0
    GPU = 1  # NVRM Xid/SXid, GPU mapping and driver notes
    MISC = 2  # PCIe AER, OOM kills, hung tasks


def triage(text: str) -> Kinds:
    kinds = Kinds.GPU if might_be_gpu_record(text) else Kinds.NONE
    return kinds | Kinds.MISC if might_be_misc(text) else kinds


def parse_kernel_message(message: str, kinds: Kinds) -> KernelMessage | None:
    """The record in ``message``: a GPU record first, else a miscellaneous one, else None."""
    if Kinds.GPU in kinds:
        record = parse_gpu_message(message)
        if record is not None:
            return record
    if Kinds.MISC in kinds:
        return parse_misc_message(message)
    return None
