"""Run a command as an unprivileged uid that can still reach this Python and this repository.

    python tests/as_user.py UID -- COMMAND...     # as root; then COMMAND runs as UID:UID, no groups

How the tests get a grader that is not root on a machine where CI is root. Python (pyenv in
/root, mode 0700) and a clone under /root would be out of reach of any other uid, so the
command gets a mount namespace of its own where box.expose binds them back read-only: the
same step the box takes for uid 65534.
"""
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autograder.core import box  # noqa: E402


def main() -> None:
    uid, sep, *command = sys.argv[1:]
    if sep != "--" or not command:
        sys.exit(__doc__)
    uid = int(uid)
    box._check(box._libc.unshare(box.CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    box._check(box._libc.mount(b"none", b"/", None, box.MS_REC | box.MS_PRIVATE, None), "make mounts private")
    stage = tempfile.mkdtemp(prefix="as-user-")
    box.expose([sys.prefix, sys.base_prefix, str(ROOT)], stage)
    os.rmdir(stage)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    os.chdir(os.getcwd())          # the working folder as the new mounts show it
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
