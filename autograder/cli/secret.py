"""python -m autograder secret: where the course secret is read from and its fingerprint (never the secret)."""
from __future__ import annotations

import sys

from ..core import seeds

NOTE = ("Hidden-test inputs are derived from the course secret, so every machine that grades the course needs "
        f"the same one: copy the file to the same path on each TA's machine (or set {seeds.ENV_FILE} to its "
        f"path, or {seeds.ENV} to its 64 hex digits) and check that each shows the same fingerprint here.")


def add_parser(commands) -> None:
    p = commands.add_parser("secret", help="where the course secret lives and its fingerprint",
                            description=__doc__.split(": ", 1)[1], epilog=NOTE)
    p.add_argument("--create", action="store_true",
                   help="make a new secret (mode 0600) where it is read from; refused when one exists")
    p.set_defaults(run=run)


def run(args) -> int:
    path = seeds.secret_path()
    try:
        if args.create:
            if path is None or not seeds.create(path):
                print(f"error: a course secret is set already, in {seeds.source()}; keep it (grades reproduce "
                      "only with it), or move it away first to start a new one", file=sys.stderr)
                return 1
            print(seeds.created(path))
        elif path is not None and not path.exists():
            print(f"secret:      {seeds.source()}: not made yet (`python -m autograder secret --create` makes it)")
            return 0
        fingerprint = seeds.secret_id(seeds.read_secret())
    except seeds.SecretError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"secret:      {seeds.source()}")
    print(f"fingerprint: {fingerprint} (every machine grading this course must show the same)")
    return 0
