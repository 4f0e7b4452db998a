"""The review queue of one results store: flagged submissions and the instructor's decisions on them.

    queue = Queue(store, {"alice.ipynb": key, ...})   # who submitted what: a name per code key
    queue.flagged()                  # {who: Result} with policy findings or held tests, decisions applied
    queue.decide("alice.ipynb", "release", note="the sys import only prints the version")
    queue.summary()                  # "review: 2 submissions of A wait ...: python -m autograder review A ..."

    file_queue(Store(Path("results.jsonl"), "residual-connections"))   # a `grade --out` store, by file

A decision is a line of the store (results/store.py) on the code that was submitted: it holds
whenever that code is graded again, and changed code waits for a decision of its own. The class
graded with nbgrader has its own queue (nbgrading/review.py), keyed by nbgrader's student ids.
"""
from __future__ import annotations

from pathlib import Path

from .render import review_summary
from .result import Result
from .store import Store


class ReviewError(ValueError):
    """A decision that cannot be recorded: no such submission, nothing graded, nothing flagged."""


class Queue:
    def __init__(self, store: Store, keys: dict[str, str], results_file: Path | None = None):
        """keys: {who: the code key of what they submitted}; results_file: the store named in the command
        the summary prints (None for the class's own store, which `review ASSIGNMENT` finds itself)."""
        self.store, self.assignment, self.keys, self.results_file = store, store.assignment, keys, results_file

    @property
    def source(self) -> Path:
        """The file the queue's results come from."""
        return self.store.path

    def decision(self, who: str) -> dict | None:
        """The newest decision line on who's submitted code, or None."""
        return self.store.decision(self.keys[who])

    def results(self) -> dict[str, Result]:
        """{who: the result kept for their submitted code, decision applied}, for those graded."""
        return {s: r for s, key in self.keys.items() if (r := self.store.get(key)) is not None}

    def flagged(self) -> dict[str, Result]:
        """The results with policy findings or held tests, waiting ones first."""
        found = {s: r for s, r in self.results().items() if r.review or any(t.held for t in r.tests)}
        return dict(sorted(found.items(), key=lambda kv: (not kv[1].waiting, kv[0])))

    def decide(self, who: str, verdict: str, note: str = "") -> Result:
        """Record the decision on who's submitted code; returns their result with it applied."""
        key = self.keys[self.known(who)]
        result = self.store.get(key)
        if result is None:
            raise ReviewError(f"{who}: submitted, but not graded into {self.store.path}; run "
                              f"`python -m autograder autograde {self.assignment}` first")
        if not (result.review or any(t.held for t in result.tests)):
            raise ReviewError(f"{who}: not flagged for review (no policy finding, no held test): nothing to decide")
        self.store.decide(key, verdict, who, note)
        return self.store.get(key)

    def known(self, who: str) -> str:
        """who, as the queue names it; a ReviewError that says what the queue's names are otherwise."""
        if who not in self.keys:
            raise ReviewError(f"{who}: no submission of that name in {self.store.path}; give a file as "
                              f"`python -m autograder review {self.assignment} --results {self.results_file}` "
                              "lists it")
        return who

    def summary(self) -> str:
        """One line: how many submissions wait for a decision, the points they hold, and the command."""
        return review_summary(list(self.results().values()), self.assignment, self.results_file)


def file_queue(store: Store) -> Queue:
    """The queue of a `grade --out` store: each graded file by its name, or by its path where two files share
    a name (the newest result of each file)."""
    results = store.submissions()
    names = [Path(r.submission).name for r in results]
    keys = {(name if names.count(name) == 1 else r.submission): r.code_key for name, r in zip(names, results)}
    return Queue(store, keys, store.path)
