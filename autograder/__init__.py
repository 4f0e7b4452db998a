"""Instructor-side tooling: course.toml, the student release, and (to come) grading."""
