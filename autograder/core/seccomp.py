"""A seccomp filter: no new socket of any family, no io_uring, no x32 or foreign-architecture
syscalls; where no memory cgroup bounds them, no memfd and no SysV shared memory either.

A child needs no socket of its own: its connection to the grader is inherited, and keeps
working; socketpair() (a connected pair, reaching nothing) too. Every family is refused
because each one left open reaches something: Landlock (ABI 7 here) does not govern
connect() to a named unix socket, a file anywhere on disk (a database, a desktop bus);
AF_VSOCK reaches the host of a virtual machine, AF_NETLINK the kernel, AF_INET the
network where the child has no network namespace of its own. io_uring is refused
because its requests bypass seccomp.
memfd and SysV segments hold memory that RLIMIT_AS does not see until it is mapped;
honest code needs neither.
"""
from __future__ import annotations

import ctypes
import os
import platform

# AUDIT_ARCH_*, then the system call numbers this filter names
_ARCH = {"x86_64": (0xC000003E, {"socket": 41, "memfd_create": 319, "shmget": 29}),
         "aarch64": (0xC00000B7, {"socket": 198, "memfd_create": 279, "shmget": 194})}
_NR_IO_URING_SETUP = 425                                              # the same on both
_LD, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06                       # BPF_LD|W|ABS, JMP|JEQ|K, JMP|JGE|K, RET|K
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_ENOSYS, _EACCES, _EPERM = 38, 13, 1
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2


class _Insn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Prog(ctypes.Structure):
    # the filter's address as a plain pointer: ctypes.POINTER(_Insn) would keep _Insn in ctypes' own type cache,
    # a module a child's code can name (nothing of the grader may be reachable from it: tests/test_reach.py)
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.c_void_p)]


def program(shared_memory: bool = True) -> list[tuple[int, int, int, int]]:
    """The filter's instructions (code, jump if true, jump if false, k); jumps count from the next one."""
    arch, nr = _ARCH[platform.machine()]
    refused = [_NR_IO_URING_SETUP] + ([] if shared_memory else [nr["memfd_create"], nr["shmget"]])
    prog = [
        (_LD, 0, 0, 4),                        # seccomp_data.arch
        (_JEQ, 1, 0, arch),                    # native? skip the next
        (_RET, 0, 0, _ERRNO | _ENOSYS),
        (_LD, 0, 0, 0),                        # seccomp_data.nr
        (_JGE, 0, 1, 0x40000000),              # x32 numbers
        (_RET, 0, 0, _ERRNO | _ENOSYS),
    ]
    tail = [
        (_JEQ, 0, 1, nr["socket"]),            # socket, whatever its family
        (_RET, 0, 0, _ERRNO | _EACCES),
        (_RET, 0, 0, _ALLOW),
        (_RET, 0, 0, _ERRNO | _EPERM),         # where each refused call jumps
    ]
    for n, number in enumerate(refused):       # over the refused checks after it and the tail before EPERM
        prog.append((_JEQ, len(refused) - n - 1 + len(tail) - 1, 0, number))
    return prog + tail


def install(shared_memory: bool = True) -> None:
    """Install the filter for good (needs no_new_privs, which Landlock has already set).
    shared_memory=False also refuses memfd_create and shmget (EPERM)."""
    instructions = program(shared_memory)
    insns = (_Insn * len(instructions))(*[_Insn(*i) for i in instructions])
    prog = _Prog(len(instructions), ctypes.addressof(insns))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"seccomp: {os.strerror(errno)}")
