"""Gradescope: an autograder zip per assignment, and the run inside Gradescope's container (docs/gradescope.md)."""
