"""Human-readable output: a result as a table, and a progress bar for batches."""
from __future__ import annotations

import sys
import time
from typing import TextIO

NAME_WIDTH = 62


def table(result: dict) -> str:
    """One grading result as a table, with each failure's message indented under its test."""
    head = f"{result['assignment']}: {result['score']} / {result['max_score']} automatic points (seed {result['seed']})"
    if "submission" in result:
        head = f"{result['submission']}\n{head}"
    lines = [head, f"{'part':>4}  {'test':<{NAME_WIDTH}} {'score':>7}"]
    for t in result["tests"]:
        name = t["name"] if len(t["name"]) <= NAME_WIDTH else t["name"][:NAME_WIDTH - 3] + "..."
        lines.append(f"{t['part']:>4}  {name:<{NAME_WIDTH}} {t['score']:>3} / {t['max_score']:<2}")
        if t["score"] < t["max_score"]:
            lines += ["        " + line for line in t["output"].splitlines()]
    return "\n".join(lines)


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
        line = f"{bar}  {_clock(elapsed)} elapsed, ~{_clock(left)} left  {label}"
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
