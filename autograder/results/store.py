"""Results kept in a JSON-lines file, keyed by a hash of the code that was graded.

    store = Store(Path("results.jsonl"), "residual-connections", secret_id=...)
    store.seed                           # None: each result has its own seed, derived from its code
    store.get(key) -> Result | None      # graded before: the same code gets the same result (decision applied)
    store.graded(key) -> Result | None   # the same, as the grader gave it
    store.has(submission) -> bool        # this file is in the store already
    store.put(key, result)               # appended, flushed and synced at once
    store.submissions()                  # the newest result of each file graded, copies included
    store.decide(key, "release", "51014")   # an instructor's decision on a result's held tests, appended

Both `python -m autograder grade --out` and the class autograde keep their results here,
so an interrupted run loses nothing and a rerun regrades nothing. The first line is a
header ({"store": 2, "assignment", "seed", "secret_id"}); each further line is one Result
with its "submission" and "key" (Result.to_store: each test's kind and misconception id too,
for the class report). Each result keeps its own seed: derived from its code and
the course secret (core/seeds.py), so the store is tied to that secret (a store opened with
another one is refused), or, for a store made with --seed, that one seed for all. A torn
last line (a run killed mid-write) is ignored, and several
processes may open and append to one file at once (each line is one locked write, and a new
store's header is written under the same lock that opening it takes).

An instructor's decision on a flagged result (`python -m autograder review`) is a line of its own,
{"decision": "release" | "confirm", "code_key", "student", "note", "at"}, never an edit: the newest
for a code_key wins, get() returns results with it applied (Result.decided), and it holds for that
code whenever it is graded again; a changed submission has another key and waits for a decision.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
from pathlib import Path

from ..core import seeds
from .result import VERDICTS, Result

FORMAT = 2   # 1: one seed drawn per store, read as a store made with that --seed


class StoreError(ValueError):
    """The file is not a results store of this assignment."""


def _mismatch(path: Path, kept: str, current: str) -> str:
    """One line for a store graded with the secret of fingerprint `kept` opened with `current`: what to do."""
    return (f"{path} was graded with the course secret of fingerprint {kept}, but this machine's secret "
            f"({seeds.source()}) has fingerprint {current}: use the secret that graded it (copy that secret file "
            f"to {seeds.default_path()}, or set {seeds.ENV_FILE} to its path), or move {path} away to regrade "
            "everything with this secret (`python -m autograder secret` shows each machine's fingerprint)")


class Store:
    def __init__(self, path: str | Path, assignment: str, seed: int | None = None, secret_id: str = ""):
        """Open the store at `path`, or make it: with `seed`, every result uses it; without, each result's
        seed is derived from its code with the course secret whose fingerprint is `secret_id`."""
        self.path, self.assignment = Path(path), assignment
        self._by_key: dict[str, Result] = {}
        self._submissions: dict[str, Result] = {}   # absolute path -> its newest result
        self._decisions: dict[str, dict] = {}       # code_key -> its newest decision line
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a+b") as f, _locked(f):       # a process making the same store writes first
            f.seek(0)
            header = self._read(f.read().decode("utf-8"))
            if header is None:
                self.seed = None if seed is None else int(seed)
                _write_line(f, {"store": FORMAT, "assignment": assignment, "seed": self.seed, "secret_id": secret_id})
                return
        self.seed = None if header.get("seed") is None else int(header["seed"])
        kept = header.get("secret_id", "")
        if self.seed is None and kept and secret_id and kept != secret_id:
            raise StoreError(_mismatch(self.path, kept, secret_id))

    def get(self, key: str) -> Result | None:
        """The result kept for this code, with the instructor's decision on it applied."""
        return self._decided(key, self._by_key.get(key))

    def graded(self, key: str) -> Result | None:
        """The result kept for this code as the grader gave it: what put() takes again (a copy's result)."""
        return self._by_key.get(key)

    def has(self, submission: str | Path) -> bool:
        return os.path.abspath(submission) in self._submissions

    def results(self) -> list[Result]:
        """Every result kept, one per key (the newest), decisions applied."""
        return [self._decided(key, result) for key, result in self._by_key.items()]

    def submissions(self) -> list[Result]:
        """The newest result of each file graded into the store, in the order first kept, decisions applied."""
        return [self._decided(r.code_key, r) for r in self._submissions.values()]

    def put(self, key: str, result: Result) -> None:
        self._append({"key": key, **result.to_store()})
        self._by_key[key] = result
        if result.submission is not None:
            self._submissions[os.path.abspath(result.submission)] = result

    def decide(self, key: str, verdict: str, student: str, note: str = "") -> dict:
        """Record an instructor's decision (one of VERDICTS) on the result kept for this code; returns its line."""
        if verdict not in VERDICTS:
            raise StoreError(f"a decision is one of {', '.join(VERDICTS)}, not {verdict!r}")
        if key not in self._by_key:
            raise StoreError(f"{self.path}: no result for code {key[:12]}... to decide on")
        line = {"decision": verdict, "code_key": key, "student": student, "note": note,
                "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
        self._append(line)
        self._decisions[key] = line
        return line

    def decision(self, key: str) -> dict | None:
        """The newest decision line on this code, or None."""
        return self._decisions.get(key)

    def _decided(self, key: str, result: Result | None) -> Result | None:
        line = self._decisions.get(key)
        return result.decided(line["decision"]) if result is not None and line else result

    def _read(self, text: str) -> dict | None:
        """Load the file's text; its header, or None when it is empty (a store being made)."""
        if not text.strip():
            return None
        header = None
        for line in text.splitlines():
            try:
                data = json.loads(line)
            except json.JSONDecodeError:
                continue                      # a torn line from a killed run
            if not isinstance(data, dict):
                continue
            if "store" in data:
                header = data
            elif data.get("decision") in VERDICTS and isinstance(data.get("code_key"), str):
                self._decisions[data["code_key"]] = data
            elif "key" in data:
                result = Result.from_json(data)
                self._by_key[data["key"]] = result
                if result.submission is not None:
                    self._submissions[os.path.abspath(result.submission)] = result
        if header is None or header.get("assignment") != self.assignment:
            raise StoreError(f"{self.path}: not a results file of {self.assignment} "
                             f"({'another assignment' if header else 'no header line'}); choose another --out")
        return header

    def _append(self, data: dict) -> None:
        with open(self.path, "a+b") as f, _locked(f):     # one whole line at a time, whoever else appends
            _write_line(f, data)


@contextlib.contextmanager
def _locked(f):
    fcntl.flock(f, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(f, fcntl.LOCK_UN)


def _write_line(f, data: dict) -> None:
    """Append one JSON line to the locked file f, synced (after a newline, if a torn line ends it)."""
    end = f.seek(0, os.SEEK_END)
    if end and os.pread(f.fileno(), 1, end - 1) != b"\n":
        f.write(b"\n")
    f.write((json.dumps(data) + "\n").encode())
    f.flush()
    os.fsync(f.fileno())
