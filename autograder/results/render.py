"""A result as people read it: a table for the terminal, the text of a part's grade cell, the review
queue's line, a progress bar."""
from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path
from typing import TextIO

from .result import Result, TestResult, count, points
from .terminal import shown

NAME_WIDTH = 62
# The widest line of a grade cell's text: it shows in a <pre> in the notebook, formgrader and
# the feedback page, which scroll sideways rather than wrap, so messages are wrapped here.
FEEDBACK_WIDTH = 92
MESSAGE_INDENT = " " * 11


def table(result: Result) -> str:
    """One result as a table, each failure's message indented under its test."""
    head = f"{result.assignment}: {result.score} / {result.max_score} automatic points (seed {result.seed})"
    if result.submission is not None:    # a file name is one line, whatever characters it holds
        head = f"{shown(result.submission, keep='')}\n{head}"
    lines = [head]
    if result.review:
        lines += ["flagged for review (the static policy, docs/security.md):",
                  *(f"  {line}" for line in result.review)]
    if held := held_line(result):
        lines.append(held)
    lines.append(f"{'part':>4}  {'test':<{NAME_WIDTH}} {'score':>7}")
    for t in result.tests:
        name = t.name if len(t.name) <= NAME_WIDTH else t.name[:NAME_WIDTH - 3] + "..."
        lines.append(f"{t.part:>4}  {name:<{NAME_WIDTH}} {_score(t)}")
        if not t.passed or t.held:
            lines += ["        " + line for line in output_lines(t)]
    return "\n".join(lines)


def score_line(result: Result) -> str:
    """"  75 / 100  path": a batch's line for one submission, its file name on that line whatever characters
    the name holds (a newline in a student's file name cannot forge a classmate's line)."""
    return f"{result.score:>4} / {result.max_score:<4} {shown(str(result.submission), keep='')}"


def held_line(result: Result) -> str | None:
    """What happened to the points of the result's held tests, in one line; None when none was held."""
    ever = points(sum(t.held for t in result.tests))
    if not ever:
        return None
    tests = count(sum(1 for t in result.tests if t.held), "test")
    if result.decision == "release":
        return f"released after an instructor's review: the {count(ever, 'point')} of {tests} held are given back"
    if result.decision == "confirm":
        return f"held, and confirmed after an instructor's review: {tests} stay at 0, {count(ever, 'point')} not given"
    return (f"held for an instructor's review: {tests} whose checks passed, 0 of their {count(ever, 'point')} now; "
            f"{ever:g} if an instructor releases them")


def review_summary(results: list[Result], assignment: str, results_file: Path | None = None,
                   option: str = "--results") -> str:
    """The line a class's commands end with: how many submissions wait for a decision, and the command
    (with `option results_file`: --results for a `grade --out` store, --gradescope-export for an export)."""
    waiting = [r for r in results if r.waiting]
    store = f" in {results_file}" if results_file else ""
    if not waiting:
        return f"review: no submission of {assignment}{store} waits for an instructor's decision"
    held = points(sum(r.held_points for r in waiting))
    command = f"python -m autograder review {assignment}" + (f" {option} {results_file}" if results_file else "")
    return (f"review: {count(len(waiting), 'submission')} of {assignment}{store} wait{'s' * (len(waiting) == 1)} "
            f"for an instructor's decision ({count(held, 'point')} held, 0 until released): {command}")


def feedback_text(result: Result, part: int) -> str:
    """What the student reads in a part's grade cell: each hidden test, its score and message."""
    lines = [f"Part {part}, graded by hidden tests run outside your notebook (seed {result.seed}):"]
    for t in result.tests:
        if t.part == part:
            mark = "passed" if t.passed else "not run" if not t.ran else "HELD" if t.kind == "held" else "FAILED"
            head = f"  {mark:<7} {_score(t)}"
            # A long name goes under its score, where the messages start.
            fits = len(head) + 1 + len(t.name) <= FEEDBACK_WIDTH
            lines += [f"{head} {t.name}"] if fits else [head.rstrip(), *_wrap(t.name)]
            if not t.passed or t.held:
                lines += [wrapped for line in output_lines(t) for wrapped in _wrap(line)]
    return "\n".join(lines) + "\n"


def output_lines(t: TestResult) -> list[str]:
    """A test's output in the lines it was written in (entry joins them with newlines): never split where
    str.splitlines also splits (U+2028, a form feed), which text a submission controls may hold (a quoted
    source line, an exception's message), so that it cannot start a line of a table or a grade cell."""
    return t.output.split("\n")


def _wrap(line: str) -> list[str]:
    """A message line in lines at most FEEDBACK_WIDTH wide; continuations indented two more."""
    indent = MESSAGE_INDENT + line[:len(line) - len(line.lstrip())]
    return textwrap.wrap(line.strip(), FEEDBACK_WIDTH, initial_indent=indent,
                         subsequent_indent=indent + "  ", break_on_hyphens=False) or [""]


def _score(t: TestResult) -> str:
    """"3 / 4"; a test that was not run says so beside the points it was given."""
    return f"{t.score:>3} / {t.max_score:<2}" + ("  (not run)" if not t.ran else "")


class Progress:
    """A plain progress bar on stderr: redrawn in place on a terminal, one line per item otherwise."""

    def __init__(self, total: int, stream: TextIO = sys.stderr, width: int = 30):
        self.total, self.stream, self.width = total, stream, width
        self.done = 0
        self.start = time.monotonic()
        self.tty = stream.isatty()

    def update(self, label: str) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.start
        left = elapsed / self.done * (self.total - self.done)
        filled = self.width * self.done // max(self.total, 1)
        bar = f"[{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total}"
        line = f"{bar}  {_clock(elapsed)} elapsed, ~{_clock(left)} left  {shown(label, keep='')}"
        if self.tty:
            self.stream.write("\r\033[K" + line)
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes}:{seconds:02d}"
