"""A seccomp filter: no AF_UNIX sockets, no io_uring, no x32 or foreign-architecture syscalls.

Landlock (ABI 7 here) does not govern connect() to a named unix socket, which is a
file anywhere on disk: a child could talk to any world-writable socket (a database,
a desktop bus). Sockets the child already holds (its connection to the grader) keep
working; socketpair() too. io_uring is refused because its requests bypass seccomp.
"""
from __future__ import annotations

import ctypes
import os
import platform

_ARCH = {"x86_64": (0xC000003E, 41), "aarch64": (0xC00000B7, 198)}   # AUDIT_ARCH_*, __NR_socket
_NR_IO_URING_SETUP = 425                                              # the same on both
_LD, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06                       # BPF_LD|W|ABS, JMP|JEQ|K, JMP|JGE|K, RET|K
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_AF_UNIX = 1


class _Insn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_Insn))]


def deny_unix_sockets() -> None:
    """Install the filter for good (needs no_new_privs, which Landlock has already set)."""
    arch, nr_socket = _ARCH[platform.machine()]
    program = [
        (_LD, 0, 0, 4),                        # 0 seccomp_data.arch
        (_JEQ, 1, 0, arch),                    # 1 native? to 3
        (_RET, 0, 0, _ERRNO | 38),             # 2 ENOSYS
        (_LD, 0, 0, 0),                        # 3 seccomp_data.nr
        (_JGE, 0, 1, 0x40000000),              # 4 x32 numbers: to 5, else 6
        (_RET, 0, 0, _ERRNO | 38),             # 5 ENOSYS
        (_JEQ, 5, 0, _NR_IO_URING_SETUP),      # 6 io_uring_setup: to 12
        (_JEQ, 0, 3, nr_socket),               # 7 socket: to 8, else 11
        (_LD, 0, 0, 16),                       # 8 args[0] (low half): the domain
        (_JEQ, 0, 1, _AF_UNIX),                # 9 AF_UNIX: to 10, else 11
        (_RET, 0, 0, _ERRNO | 13),             # 10 EACCES
        (_RET, 0, 0, _ALLOW),                  # 11
        (_RET, 0, 0, _ERRNO | 1),              # 12 EPERM
    ]
    insns = (_Insn * len(program))(*[_Insn(*i) for i in program])
    prog = _Prog(len(program), insns)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"seccomp: {os.strerror(errno)}")
