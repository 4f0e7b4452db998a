"""Per-submission seeds: the hidden tests' inputs follow from the submitted code and a course secret.

    secret = read_secret()                       # 32 bytes, kept outside the repository
    seed = derive(secret, "residual-connections", extracted.key)   # same code, same seed
    secret_id(secret)                            # names the secret in results, reveals nothing

A seed per assignment let feedback from three regrades, or from classmates, fill a lookup table
of the hidden answers. With the seed an HMAC of the code, any change to the code draws new
inputs, and without the secret nobody can compute which. The secret is looked up in order:

    RESIDUAL_COURSE_SECRET        the secret itself, 64 hex digits (CI, tests, the demo)
    RESIDUAL_COURSE_SECRET_FILE   a file holding it
    $XDG_CONFIG_HOME/residual-course/secret (~/.config/...), made with mode 0600 on first use

`python -m autograder secret` prints where it is read from (source()) and its fingerprint; --create makes the file.

A grader reads it only after its fork server started, so no sandbox child inherits it
(`loaded()` tells Grader not to fork a process that holds it).
"""
from __future__ import annotations

import hmac
import os
import secrets
import sys
from pathlib import Path

from ..course import ROOT

ENV, ENV_FILE = "RESIDUAL_COURSE_SECRET", "RESIDUAL_COURSE_SECRET_FILE"
DOMAIN = b"residual-course/seed/v1\0"        # v1: the derivation may change without colliding
MAKE_ONE = "make one with: python -c 'import secrets; print(secrets.token_hex(32))'"
_loaded = False


class SecretError(ValueError):
    """The course secret is malformed, readable by others, or inside the repository."""


def derive(secret: bytes, assignment: str, code_key: str) -> int:
    """A 63-bit seed from the secret, the assignment and Extracted.key (a sha256 in hex)."""
    message = DOMAIN + assignment.encode() + b"\0" + bytes.fromhex(code_key)
    return int.from_bytes(hmac.new(secret, message, "sha256").digest()[:8], "big") >> 1


def secret_id(secret: bytes) -> str:
    """12 hex digits that tell which secret graded a result, without revealing it."""
    return hmac.new(secret, b"residual-course/secret-id/v1", "sha256").hexdigest()[:12]


def loaded() -> bool:
    """Whether this process has read the secret (then it must not be forked into a fork server)."""
    return _loaded


def read_secret() -> bytes:
    """The course secret, from the environment or its file (made on first use); SecretError if unusable."""
    global _loaded
    path = secret_path()
    secret = _parse(os.environ[ENV], ENV) if path is None else _parse(_read_file(path), str(path))
    _loaded = True
    return secret


def secret_path() -> Path | None:
    """The file the secret is read from, or None when RESIDUAL_COURSE_SECRET holds it."""
    return None if os.environ.get(ENV) else Path(os.environ.get(ENV_FILE) or default_path()).expanduser()


def source() -> str:
    """Where the secret is read from, in words: the variable, or the file and which setting named it."""
    path = secret_path()
    if path is None:
        return f"the environment variable {ENV}"
    return f"{path} (named by {ENV_FILE})" if os.environ.get(ENV_FILE) else f"{path} (the default file)"


def default_path() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "residual-course" / "secret"


def _outside_repository(path: Path) -> None:
    if path.resolve().is_relative_to(ROOT.resolve()):
        raise SecretError(f"the course secret {path} lies inside the course repository, which releases and "
                          f"commits would ship: move it out (e.g. to {default_path()}) and point {ENV_FILE} at it")


def _read_file(path: Path) -> str:
    _outside_repository(path)
    if not path.exists() and create(path):
        print(created(path), file=sys.stderr)
    if path.stat().st_mode & 0o077:
        raise SecretError(f"the course secret {path} is readable by others: chmod 600 {path}")
    return path.read_text(encoding="ascii", errors="replace")


def created(path: Path) -> str:
    return (f"created the course secret at {path}. Hidden-test inputs are derived from it: keep it and back it up "
            "with the gradebook. Grades reproduce only with the same secret, so every machine that grades this "
            "course needs a copy, and students must never see it. Never commit it to the course repository.")


def create(path: Path) -> bool:
    """Make a new secret at `path` (mode 0600); False when a file is there already, SecretError inside the repository."""
    _outside_repository(path)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)   # two graders at once: one writes
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    return True


def _parse(text: str, where: str) -> bytes:
    text = text.strip()
    try:
        secret = bytes.fromhex(text)
    except ValueError:
        secret = b""
    if len(secret) != 32:
        raise SecretError(f"{where}: the course secret must be 64 hex digits (32 bytes); {MAKE_ONE}")
    return secret

