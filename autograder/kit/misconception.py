"""A misconception a hidden test can name: its id, one line saying what is misunderstood, and
where the notebook teaches it. Each suite declares its table (suites/ASSIGNMENT/misconceptions.py)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Misconception:
    id: str           # what failures carry, e.g. "silent-broadcasting"
    explanation: str  # one line, for the instructor
    taught: str       # the notebook's section that teaches it
