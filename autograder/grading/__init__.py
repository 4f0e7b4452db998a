"""Grading: the Grader (one assignment set up once) and batches of notebooks."""
