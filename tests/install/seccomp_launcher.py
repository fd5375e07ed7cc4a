"""Run a command under a seccomp filter built the way systemd builds the unit's: the listed
system calls allowed, every other one failing with EPERM (SystemCallFilter= allow list plus
SystemCallErrorNumber=EPERM), socket() only for the listed address families
(RestrictAddressFamilies=), native architecture only. libseccomp (Debian's libseccomp2, which
systemd itself links) through ctypes; the filter survives execve() into the command.

    python seccomp_launcher.py ALLOWED_FILE FAMILY[,FAMILY…] -- COMMAND…
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import socket
import sys

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_EQ = 4


def scmp_act_errno(code: int) -> int:
    return 0x00050000 | (code & 0x0000FFFF)


class ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


def main(argv: list[str]) -> None:
    allowed_file, families, sep, *command = argv
    assert sep == "--" and command, __doc__
    lib = ctypes.CDLL(ctypes.util.find_library("seccomp") or "libseccomp.so.2", use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(ArgCmp),
    ]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(scmp_act_errno(errno.EPERM))
    assert ctx, "seccomp_init failed"
    with open(allowed_file, encoding="utf-8") as f:
        names = {line.strip() for line in f if line.strip()}
    names.discard("socket")  # allowed below, per address family
    for name in sorted(names):
        nr = lib.seccomp_syscall_resolve_name(name.encode())
        if nr < 0:  # not a system call of this architecture
            continue
        rc = lib.seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, 0, None)
        assert rc == 0, (name, rc)
    socket_nr = lib.seccomp_syscall_resolve_name(b"socket")
    for family in families.split(","):
        cmp = ArgCmp(0, SCMP_CMP_EQ, int(getattr(socket, family)), 0)
        rc = lib.seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, socket_nr, 1, ctypes.byref(cmp))
        assert rc == 0, (family, rc)
    assert lib.seccomp_load(ctx) == 0, "seccomp_load failed"  # sets no_new_privs too
    os.execv(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
