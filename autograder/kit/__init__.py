"""The test kit the hidden suites are written with (see trial.py)."""
from .misconception import Misconception
from .trial import Failed, Observation, Remote, Suite, Test, Trial, describe, excerpt, part_label, shape_in, show

__all__ = ["Failed", "Misconception", "Observation", "Remote", "Suite", "Test", "Trial", "describe", "excerpt",
           "part_label", "shape_in", "show"]
