"""The box around a sandbox child: its own namespaces, an unprivileged user, limits, a cgroup.

Zygote side (torch imported):

    Cgroup.sweep()                # once: groups an earlier zygote left when it was killed
    cgroup = Cgroup.create(group_name(owner, n), memory_mb=2048, pids=64, cpus=1)   # None where none can be made
    pid = fork_in_pid_namespace() if namespaces else os.fork()   # the child is PID 1 of a new PID namespace
    if pid == 0:
        got, lacking = enter(Box(...), scratch, readable, writable, cgroup, env)
        ...run the submission...
    ...waitpid(pid); then cgroup.oom_killed(), cgroup.remove()

When the child (its namespace's init) dies, the kernel kills every process left in
its PID namespace, however it was detached (setsid, double fork), and frees the
SysV segments of its IPC namespace, and unmounts its tmpfs scratch. Memory is
charged to the cgroup, memfd and shared memory included, so RLIMIT_AS is no longer
the only bound.

As root everything applies. A grader that is not root first puts its fork server in a
user namespace of its own (own_user_namespace), where the same namespaces and mounts
can be made over what its uid owns; the child then keeps the grader's uid but gives up
every capability, and only the cgroup is missing (it needs root or systemd's
delegation). Without either, or on a kernel lacking a feature, enter() applies what it
can (rlimits, clean environment, Landlock, seccomp, no_new_privs) and lists what is
missing; docs/security.md says what each platform gets.
"""
from __future__ import annotations

import ctypes
import errno
import os
import resource
import secrets
import signal
import time
from dataclasses import dataclass

from . import landlock, seccomp

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = \
    0x00020000, 0x08000000, 0x10000000, 0x20000000, 0x40000000
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 1, 24, 38, 47, 4
CAP_SYS_ADMIN = 21
SYS_MOUNT_SETATTR, AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY = 442, -100, 0x8000, 0x1   # 442 on x86_64 and arm64
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x1, 0x2, 0x4, 0x20, 0x1000, 0x4000, 0x40000
MNT_DETACH = 2
MADV_COLLAPSE, HUGE_PAGE = 25, 2 << 20

_libc = ctypes.CDLL(None, use_errno=True)
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def _check(result: int, what: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
    return result


@dataclass(frozen=True)
class Box:
    """What a child gets. Sizes in MiB; uid/gid: an id no file on the machine belongs to."""
    memory_mb: int = 2048       # cgroup limit: the child's own pages, memfd, shm and page cache included
    address_mb: int = 4096      # RLIMIT_AS (torch alone reserves about 1 GiB of address space); RLIMIT_DATA with cuda
    scratch_mb: int = 256       # the scratch folder is a tmpfs of this size, private to the child
    nproc: int = 64             # processes and threads of one child (pids.max; RLIMIT_NPROC without a pids cgroup)
    cpus: float = 1.0           # CPU time per second of the wall clock, all its processes together (cpu cgroup)
    fsize_mb: int = 64          # largest file it may write (RLIMIT_FSIZE)
    nofile: int = 256           # open files (RLIMIT_NOFILE)
    cpu_s: int = 600            # CPU seconds, a backstop behind the grader's wall-clock deadline
    uid: int = 65534
    gid: int = 65534
    cuda: bool = False          # the CUDA driver reserves far more address space than it uses


# ------------------------------------------------------------------ zygote side

def own_user_namespace() -> bool:
    """Unless root, carry on in a new user namespace, as the same uid and gid, and a PID namespace it owns.

    There this process holds every capability over what the user namespace owns: the PID,
    network, IPC and mount namespaces its children make, and mounts in those; nothing
    outside. The PID namespace is needed because setns() back to the machine's (as
    fork_in_pid_namespace does) would need root. So this process forks: the child returns
    True and goes on as PID 1 of the new namespace (every process in it dies with it); the
    parent waits and exits as the child did, so whoever started it sees one process. False
    for root (who needs none) and where the kernel refuses: user namespaces disabled, no
    pidfd (the grader could not aim a signal at a PID it cannot see), or the process has
    threads (so call it before importing torch, which starts one).
    """
    if os.geteuid() == 0:
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    if not _unshare_user(CLONE_NEWPID):
        return False
    pid = os.fork()
    if pid == 0:
        die_with_parent(signal.SIGKILL)
        return True
    signal.signal(signal.SIGINT, signal.SIG_IGN)       # Ctrl-C is for the grader; it then closes the socket
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    os._exit(code if code >= 0 else 128 - code)


def _unshare_user(also: int = 0) -> bool:
    """unshare(CLONE_NEWUSER | also), mapping this process's uid and gid to themselves; False if refused."""
    uid, gid = os.getuid(), os.getgid()
    if _libc.unshare(CLONE_NEWUSER | also) < 0:
        return False
    for file, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{file}", "w") as f:
            f.write(text)
    return True


_own_pid_ns: int | None = None


def fork_in_pid_namespace() -> int:
    """os.fork(), with the child as PID 1 of a new PID namespace; the caller stays in its own.

    unshare(CLONE_NEWPID) moves only the caller's future children, so the zygote
    unshares, forks, and switches its "children's namespace" back with setns.
    """
    global _own_pid_ns
    if _own_pid_ns is None:
        _own_pid_ns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    _check(_libc.unshare(CLONE_NEWPID), "unshare(CLONE_NEWPID)")
    pid = -1
    try:
        pid = os.fork()
        return pid
    finally:
        if pid != 0:               # the parent, or a failed fork (the child has nothing to undo)
            _check(_libc.setns(_own_pid_ns, CLONE_NEWPID), "setns back to the zygote's PID namespace")


def collapse_to_huge_pages(budget_s: float = 1.0) -> int:
    """Move this process's private anonymous memory onto 2 MiB pages where the kernel can (MADV_COLLAPSE,
    Linux 6.1 and later, whatever /sys/kernel/mm/transparent_hugepage says); returns the MiB moved.

    A fork copies one page-table entry for each 4 KiB page the parent holds, and the child's exit
    frees them: with torch loaded that is about 40,000 entries, a third of what a child's start and
    end cost. On a huge page it is one entry; a child that writes there splits only that one back.
    Each 2 MiB range is asked alone, since the kernel refuses a whole call for one range it cannot
    move; where it moves none (an older kernel), forks cost what they did. It stops after `budget_s`:
    on a machine whose memory is fragmented each huge page may first need compacting.
    """
    with open("/proc/self/maps") as maps:
        regions = [line.split() for line in maps]
    moved, end = 0, time.monotonic() + budget_s
    for fields in regions:
        access, name = fields[1], fields[5] if len(fields) > 5 else ""
        if not access.startswith("rw") or access[3] != "p" or name not in ("", "[heap]"):
            continue
        low, high = (int(address, 16) for address in fields[0].split("-"))
        for start in range(-(-low // HUGE_PAGE) * HUGE_PAGE, high // HUGE_PAGE * HUGE_PAGE, HUGE_PAGE):
            if time.monotonic() > end:
                return moved
            moved += 2 * (_libc.madvise(start, HUGE_PAGE, MADV_COLLAPSE) == 0)
    return moved


GROUP_PREFIX = "autograder-"
# a younger group is left alone: it may be one a zygote in another PID namespace (where its PID means
# nothing here) has just made, its child not in it yet
SWEEP_AFTER_S = 60
REMOVE_WAIT_S = 1.0     # how long a child's group may stay busy after the child is reaped


def group_owner() -> str:
    """The calling zygote's part of its groups' names: its PID, which tells a later sweep whether it
    still runs, and a random token, because PIDs come round again (pid_max is often 32768) and two
    zygotes in PID namespaces of their own are both PID 1."""
    return f"{os.getpid()}-{secrets.token_hex(4)}"


def group_name(owner: str, serial: int) -> str:
    return f"{GROUP_PREFIX}{owner}-{serial}"


class Cgroup:
    """A child's cgroup with memory (and pids where available) limits: v2 or v1 controllers.

    Created by the zygote before the fork, joined by the child, removed after it is reaped
    (and by the zygote as it exits, for the children it then kills).
    """

    def __init__(self, dirs: dict[str, str]):
        self.dirs = dirs          # controller -> directory of this child's group

    @classmethod
    def create(cls, name: str, memory_mb: int, pids: int, cpus: float) -> "Cgroup | None":
        """None when this process cannot make a memory cgroup (no controller, not delegated, not root).
        cpus: the CPU time it may take per second of the wall clock, however many processes or
        sessions it starts; where the cpu controller is there, its group also has the same weight
        as any other group or process (the default), so a child's many processes count as one."""
        parents = _controller_dirs()
        if "memory" not in parents:
            return None
        dirs = {}
        try:
            for controller, parent in parents.items():
                path = os.path.join(parent, name)
                if path not in dirs.values():
                    os.mkdir(path)
                dirs[controller] = path
            group = cls(dirs)
            limit = str(memory_mb << 20)
            if parents["memory"] == parents.get("v2"):
                group._write("memory", "memory.max", limit)
                group._write("memory", "memory.swap.max", "0", optional=True)
            else:
                group._write("memory", "memory.limit_in_bytes", limit)
                group._write("memory", "memory.memsw.limit_in_bytes", limit, optional=True)
            if "pids" in dirs:
                group._write("pids", "pids.max", str(pids))
            period = 100_000      # microseconds: the kernel's default period
            if "cpu" in dirs and parents["cpu"] == parents.get("v2"):
                group._write("cpu", "cpu.max", f"{int(cpus * period)} {period}")
            elif "cpu" in dirs:
                group._write("cpu", "cpu.cfs_period_us", str(period))
                group._write("cpu", "cpu.cfs_quota_us", str(int(cpus * period)))
            return group
        except OSError:
            cls(dirs).remove()
            return None

    def _write(self, controller: str, file: str, value: str, optional: bool = False) -> None:
        try:
            with open(os.path.join(self.dirs[controller], file), "w") as f:
                f.write(value)
        except OSError:
            if not optional:
                raise

    def join(self) -> None:
        """Move the calling process (and so everything it starts) into the group."""
        for path in set(self.dirs.values()):
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write("0")

    def cpu_usage_file(self) -> str | None:
        """The file that counts the CPU time of every process in the group (cpu_seconds reads it)."""
        if "v2" in self.dirs:
            return os.path.join(self.dirs["v2"], "cpu.stat")            # usage_usec, with or without the controller
        if "cpuacct" in self.dirs:
            return os.path.join(self.dirs["cpuacct"], "cpuacct.usage")  # nanoseconds
        return None

    def oom_killed(self) -> bool:
        """Did the kernel kill a process of this group for exceeding the memory limit?"""
        path = self.dirs["memory"]
        try:
            with open(os.path.join(path, "memory.events")) as f:          # v2
                return dict(line.split() for line in f).get("oom_kill", "0") != "0"
        except FileNotFoundError:
            with open(os.path.join(path, "memory.oom_control")) as f:      # v1
                return dict(line.split() for line in f).get("oom_kill", "0") != "0"

    def remove(self) -> None:
        """rmdir the group's directories. Once a child's PID namespace is gone its group is empty, but
        the kernel may take a moment to let go of the last exiting process: a group still busy after
        REMOVE_WAIT_S is left to a later sweep."""
        end = time.monotonic() + REMOVE_WAIT_S
        for path in sorted(set(self.dirs.values()), reverse=True):
            while True:
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError as e:
                    if e.errno != errno.EBUSY or time.monotonic() > end:
                        return
                    time.sleep(0.01)

    @staticmethod
    def sweep() -> None:
        """Remove the empty groups, older than SWEEP_AFTER_S, of zygotes that no longer run (one killed
        before it could remove its children's). As root only: a zygote's PID is then one of this PID
        namespace, so no other grader's live group is taken for a dead one's."""
        if os.geteuid() != 0:
            return
        for parent in set(_controller_dirs().values()):
            try:
                names = os.listdir(parent)
            except OSError:
                continue
            for name in names:
                pid = name.removeprefix(GROUP_PREFIX).split("-", 1)[0]
                if not name.startswith(GROUP_PREFIX) or not pid.isdigit() or _alive(int(pid)):
                    continue
                path = os.path.join(parent, name)
                try:
                    if time.time() - os.stat(path).st_mtime > SWEEP_AFTER_S:
                        os.rmdir(path)      # refused while a process is in it
                except OSError:
                    pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def cpu_seconds(fd: int) -> float:
    """The CPU seconds counted by the file open as fd: a cgroup's cpu_usage_file (every process in
    the group), or /proc/PID/stat (that process and the children it reaped)."""
    text = os.pread(fd, 4096, 0).decode()
    if ")" in text:                     # /proc/PID/stat: utime, stime, cutime, cstime, in clock ticks
        return sum(map(int, text.rsplit(")", 1)[1].split()[11:15])) / os.sysconf("SC_CLK_TCK")
    if text.startswith("usage_usec"):   # v2 cpu.stat
        return int(text.split()[1]) / 1e6
    return int(text) / 1e9              # v1 cpuacct.usage


CONTROLLERS = ("memory", "pids", "cpu", "cpuacct")


def _controller_dirs() -> dict[str, str]:
    """controller -> the directory of this process's cgroup for it, where a child group can be made.

    v2 ("0::/path"): memory, pids and cpu when the group's cgroup.subtree_control enables them;
    v1: one hierarchy per controller (cpuacct counts CPU time there). A v2 directory is also listed as "v2".
    """
    mounts = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ")
            fstype, _, options = right.split()
            mount_point = left.split()[4]
            if fstype == "cgroup2":
                mounts["v2"] = mount_point
            elif fstype == "cgroup":
                for controller in CONTROLLERS:
                    if controller in options.split(","):
                        mounts[controller] = mount_point
    dirs = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            if controllers == "" and "v2" in mounts:
                base = mounts["v2"] + path
                try:
                    with open(os.path.join(base, "cgroup.subtree_control")) as g:
                        enabled = g.read().split()
                except OSError:
                    continue
                for controller in CONTROLLERS:
                    if controller in enabled:
                        dirs[controller] = dirs["v2"] = base
            for controller in controllers.split(","):
                if controller in CONTROLLERS and controller in mounts and controller not in dirs:
                    dirs[controller] = mounts[controller] + path
    return {c: d for c, d in dirs.items() if os.access(d, os.W_OK)}


# ------------------------------------------------------------------ child side

def enter(box: Box, scratch: str, readable: list[str], writable: list[str],
          cgroup: Cgroup | None, env: dict[str, str]) -> tuple[list[str], list[str]]:
    """Confine the calling child for good; returns (what it got, what it lacks), a phrase each.

    Order matters: the cgroup and namespaces need root (or the capabilities of a user
    namespace's owner), the limits on processes only count once those are gone, and the
    parent-death signal is reset by a uid change.
    """
    got, lacking = [], []
    root = os.geteuid() == 0
    owner = not root and bool(_capabilities() >> CAP_SYS_ADMIN & 1)   # in the zygote's own user namespace
    if cgroup is not None:
        cgroup.join()
        got.append(f"a {box.memory_mb} MiB memory cgroup" + (f", {box.cpus:g} CPU" if "cpu" in cgroup.dirs else ""))
    else:
        lacking.append("no memory cgroup (memory is bounded per process: its address space, times the "
                       "limit on processes)")
    if os.getpid() == 1:
        got.append("its own PID namespace")
    else:
        lacking.append("no PID namespace (a detached process can outlive the grading)")
    # RLIMIT_NPROC counts a uid's processes per user namespace: one of its own keeps this child's
    # count apart from the other children's of the same zygote
    own_count = owner and _unshare_user()
    try:
        _check(_libc.unshare(CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWNS), "unshare(network, IPC, mount)")
        private_scratch(scratch, box)
        if root:
            expose(readable, scratch)
        got.append(f"no network, private IPC, a {box.scratch_mb} MiB tmpfs scratch")
    except OSError as e:
        lacking.append(f"no network, IPC or mount namespace ({e.strerror or e})")
    else:
        try:
            read_only_but(scratch)
            got.append("the rest read-only")
        except OSError as e:       # mount_setattr came with Linux 5.12
            lacking.append(f"mounts left writable: the metadata of files the child's uid may write can change "
                           f"({e.strerror or e})")
    clean_environment(env)
    if root:
        os.chown(scratch, box.uid, box.gid)
    os.chdir(scratch)
    def limit(r: int, v: int) -> None:      # never above the hard limit it has (only root may raise one)
        hard = resource.getrlimit(r)[1]
        v = v if hard == resource.RLIM_INFINITY else min(v, hard)
        resource.setrlimit(r, (v, v))

    limit(resource.RLIMIT_DATA if box.cuda else resource.RLIMIT_AS, box.address_mb << 20)
    # RLIMIT_NPROC counts the processes of the uid in the process's user namespace: for uid
    # 65534 with a pids cgroup (one per child) a backstop for all children together; in the
    # child's own user namespace, its own; for the grader's uid in the machine's namespace it
    # would count the user's other processes, so it is left alone
    if root:
        limit(resource.RLIMIT_NPROC, box.nproc * 64 if cgroup and "pids" in cgroup.dirs else box.nproc)
    elif own_count:
        limit(resource.RLIMIT_NPROC, box.nproc)
    elif cgroup is None or "pids" not in cgroup.dirs:
        lacking.append("no limit on processes")
    limit(resource.RLIMIT_FSIZE, box.fsize_mb << 20)
    limit(resource.RLIMIT_NOFILE, box.nofile)
    limit(resource.RLIMIT_CPU, box.cpu_s)
    for r in (resource.RLIMIT_CORE, resource.RLIMIT_RTPRIO, resource.RLIMIT_MSGQUEUE):
        limit(r, 0)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)     # a too-large write fails with EFBIG instead of killing
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    try:
        got.append(f"landlock ABI {landlock.confine(readable, writable)}")
    except OSError as e:
        lacking.append(f"no filesystem isolation ({e})")
    # without a cgroup nothing would bound memfd and SysV memory that is never mapped; a CUDA
    # driver may need them, and a GPU grader is root in practice
    shared_memory = cgroup is not None or box.cuda
    seccomp.install(shared_memory)
    got.append("no new sockets" if shared_memory else "no new sockets, memfd or SysV shared memory")
    if root:
        drop_privileges(box.uid, box.gid)
        got.append(f"uid {box.uid} without capabilities")
    elif owner:
        drop_capabilities()
        got.append(f"the grader's uid {os.getuid()} without capabilities, in a user namespace")
    else:
        got.append("the grader's own uid")
    die_with_parent(signal.SIGKILL)
    return got, lacking


def private_scratch(scratch: str, box: Box) -> None:
    """Mount a tmpfs of box.scratch_mb over the scratch folder, seen only in this mount namespace.

    RLIMIT_FSIZE bounds one file, not their number; a tmpfs bounds the total, its pages
    count against the memory cgroup, and it vanishes with the child's last process.
    """
    _check(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make mounts private")
    options = f"size={box.scratch_mb}m,mode=0700,uid={box.uid},gid={box.gid}".encode()
    _check(_libc.mount(b"scratch", scratch.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options), "mount tmpfs")


def expose(paths: list[str], scratch: str) -> None:
    """Make each existing path reachable for an unprivileged uid, read-only, in this mount namespace.

    Python may live under a folder others cannot enter (pyenv in /root, mode 0700): uid 65534
    could not import a module the fork server had not. Such a folder gets an empty tmpfs
    (mode 0755) over it, so nothing else of it shows, with the paths inside bound back read-only.
    """
    blocked: dict[str, list[str]] = {}
    for path in sorted(p for p in set(paths) if os.path.exists(p)):
        blocker = _closed_ancestor(path)
        if blocker and not any(path.startswith(q + os.sep) for q in blocked.get(blocker, [])):
            blocked.setdefault(blocker, []).append(path)
    for blocker, inside in blocked.items():
        stages = []
        for n, path in enumerate(inside):           # hold each path at a stage while the folder is covered
            stage = os.path.join(scratch, f".expose-{n}")
            os.mkdir(stage)
            _mount(path, stage, None, MS_BIND | MS_REC)
            stages.append(stage)
        _mount("none", blocker, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k")
        for path, stage in zip(inside, stages):
            os.makedirs(path, exist_ok=True)
            _mount(stage, path, None, MS_BIND | MS_REC)
            _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY)
            _check(_libc.umount2(stage.encode(), MNT_DETACH), "umount2")
            os.rmdir(stage)


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def read_only_but(scratch: str) -> None:
    """Every mount of this mount namespace read-only, but the scratch tmpfs.

    Landlock governs no change of metadata: without this a child could chmod, chown, touch or
    set extended attributes on any file its uid owns or may write (the grader's own files,
    when the grader is not root; a world-writable file anywhere). A read-only mount refuses
    them all (EROFS); device files such as /dev/null stay writable.
    """
    def setattr_(path: str, flags: int, attr: _MountAttr, what: str) -> None:
        _check(_libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path.encode(), flags, ctypes.byref(attr),
                             ctypes.sizeof(attr)), what)

    setattr_("/", AT_RECURSIVE, _MountAttr(attr_set=MOUNT_ATTR_RDONLY), "mount_setattr(read-only)")
    setattr_(scratch, 0, _MountAttr(attr_clr=MOUNT_ATTR_RDONLY), "mount_setattr(scratch writable)")


def _closed_ancestor(path: str) -> str | None:
    """The first folder on the way to `path` that others may not enter, or None."""
    folder = "/"
    for part in os.path.abspath(path).strip("/").split("/")[:-1]:
        folder = os.path.join(folder, part)
        if not os.stat(folder).st_mode & 0o001:
            return folder
    return None


def _mount(source: str | None, target: str, fstype: str | None, flags: int, options: str | None = None) -> None:
    enc = lambda s: s.encode() if s is not None else None
    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(options)), f"mount {target}")


def drop_privileges(uid: int, gid: int) -> None:
    """Become uid/gid (from root) with no supplementary groups and no capabilities, not even in the bounding set."""
    _drop_bounding_set()
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)       # clears the permitted and effective capability sets
    if _capabilities() != 0:
        raise OSError("capabilities remain after the uid change")


def drop_capabilities() -> None:
    """Give up every capability and keep the uid (a user namespace's owner: no other uid is mapped in it)."""
    _drop_bounding_set()
    _check(_libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "prctl(PR_CAP_AMBIENT_CLEAR_ALL)")
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)       # _LINUX_CAPABILITY_VERSION_3, this process
    _check(_libc.capset(header, (ctypes.c_uint32 * 6)()), "capset(no capabilities)")
    if _capabilities() != 0:
        raise OSError("capabilities remain after capset")


def _drop_bounding_set() -> None:
    for cap in range(64):             # up to the kernel's last capability: then EINVAL
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0:
            break


def _capabilities() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    raise OSError("no CapEff in /proc/self/status")


def clean_environment(env: dict[str, str]) -> None:
    """Only `env` in os.environ, in libc's environ, and in the memory /proc/self/environ shows.

    os.environ.clear() unsets every variable, but the strings the process was started
    with stay on its stack, where /proc/self/environ and ctypes.string_at can read them.
    """
    os.environ.clear()
    os.environ.update(env)
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    start, end = int(fields[47]), int(fields[48])    # env_start, env_end: fields 50 and 51 of stat(5)
    if 0 < start < end:
        ctypes.memset(start, 0, end - start)


def die_with_parent(sig: int) -> None:
    """Have the kernel send `sig` to the calling process when its parent ends, however it ends."""
    _check(_libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")


def pid_namespaces_work() -> bool:
    """Can this process give each child its own PID namespace? (root on Linux; tried once, by a fork)"""
    try:
        pid = fork_in_pid_namespace()
    except OSError:
        return False
    if pid == 0:
        os._exit(0 if os.getpid() == 1 else 1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
