"""One pre-check for every kernel parser, usable on whole chunks of a file at C speed.

``might_be_gpu_record`` (xid.py) and ``might_be_misc`` (kernel_misc.py) decide per record whether
any parser could match; replay scans a file's bytes for the same keywords with one regex and
looks at the surrounding record only where one occurs. The keyword set here must stay the union
of theirs (a test checks it on every fixture line).
"""

from __future__ import annotations

import re

GPU_KEYWORDS = ("NVRM", "SXid")
MISC_KEYWORDS = (
    "AER",
    "PCIe Bus Error",
    "error status/mask",
    ":    [",
    "Killed process",
    "blocked for",
)
_ALL = GPU_KEYWORDS + MISC_KEYWORDS
INTERESTING_BYTES = re.compile("|".join(re.escape(k) for k in _ALL).encode())
MISC = re.compile("|".join(re.escape(k) for k in MISC_KEYWORDS))
