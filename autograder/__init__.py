"""Instructor-side tooling: course.toml, the student release, the out-of-kernel grader, nbgrader and Canvas."""
import sys

# jsonschema (imported by nbformat) loads rfc3987_syntax, where it is installed, for its optional
# "iri" format checks, and that module builds a parser at import: about a second of every
# command's start. No notebook schema uses the format, so these processes go without it.
sys.modules.setdefault("rfc3987_syntax", None)
