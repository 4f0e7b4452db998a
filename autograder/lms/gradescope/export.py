"""Gradescope's "Export Submissions" zip read back: each submission's results.json as the Result the
results store holds, with who submitted it, how late, and its notebook, for the class report, `review`
and `status` (docs/gradescope.md, "Reading an export back").

    export = read_export(Path("assignment_123_export.zip"), "residual-connections")   # ExportError: one line
    export.submissions      # [Submission(id, submitters, result, notebook, late_days)], sorted by name
    export.problems         # ["submission_7: no results/results.json (...)", ...]: left out, the rest read
    ExportQueue(export)     # its review list (results/review.py); a decision is a manual regrade on Gradescope
    export.left_out()       # "left out: submission_7: ...", a line each, for the commands to print first
    status_lines(export)    # what `status --gradescope-export` prints

The zip, as Gradescope writes it for a programming assignment:

    assignment_<id>_export/
        submission_metadata.yml     submission_<id>: {:submitters: [{:name, :sid, :email}], :created_at,
                                    :score, :status, ...}, one entry per student's active submission
        submission_<id>/            the student's files as uploaded, and results/results.json (results.py)

results.json carries each test's id, score, output, kind and misconception id, and the policy's findings
(results.py), so a Result is rebuilt whole, its tests keyed by id as the results store's are; one written
by an older zip lacks the ids (its tests are then known by their sentences) and the kinds (its failures
count as wrong answers with no misconception named).
"""
from __future__ import annotations

import json
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

import nbtest

from ...results.render import review_summary
from ...results.result import Result, TestResult, count, points
from ...results.review import Queue, ReviewError
from ...results.terminal import shown
from .results import WRITTEN_TAG

METADATA = "submission_metadata.yml"
RESULTS = "results/results.json"
MANUAL = ("a Gradescope course's flagged submissions are decided by a manual regrade on Gradescope "
          "(docs/gradescope.md, \"Held tests: a manual regrade\")")


class ExportError(ValueError):
    """The file is not an export this course can read, or one submission in it is not: what and why."""


@dataclass(frozen=True)
class Submitter:
    name: str
    sid: str      # the student ID the course gave Gradescope ("" where none)
    email: str


@dataclass(frozen=True)
class Submission:
    id: str                          # its folder: "submission_123"
    submitters: tuple[Submitter, ...]
    result: Result
    notebook: bytes | None           # None: not exactly one .ipynb uploaded
    late_days: int | None = None     # started days late (results.json's late record); None: not recorded

    @property
    def name(self) -> str:
        """"Ada Lovelace (51001)", group members joined with "; ", the folder where the metadata names none."""
        return "; ".join(f"{s.name} ({s.sid})" if s.sid else s.name for s in self.submitters) or self.id


@dataclass(frozen=True)
class Export:
    path: Path
    assignment: str
    submissions: list[Submission]
    problems: list[str]

    def left_out(self) -> str:
        """What the commands print first: a line per submission left out, and why, each one line whatever its
        text (a file name the student chose, quoted from results.json, may hold newlines: red team 39)."""
        return "\n".join(f"left out: {shown(p, keep='')}" for p in self.problems) or "left out: none"


def read_export(path: Path, assignment: str) -> Export:
    """Every submission the metadata lists, read; each one that cannot be read is a line of problems."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as e:
        raise ExportError(f"{path}: not a zip archive ({e}); download the assignment's Review Grades > "
                          "Export Submissions") from None
    with archive:
        names = set(archive.namelist())
        found = sorted(n for n in names if PurePosixPath(n).name == METADATA and len(PurePosixPath(n).parts) <= 2)
        if not found:
            raise ExportError(f"{path}: no {METADATA} at its top or in its top folder: not a Gradescope "
                              "Export Submissions zip")
        prefix = found[0].removesuffix(METADATA)            # "assignment_123_export/", or ""
        listed = _metadata(archive, found[0], path)
        submissions, problems = [], []
        for folder, record in listed.items():
            try:
                submissions.append(_submission(archive, names, prefix, str(folder), record, assignment))
            except ExportError as e:
                problems.append(f"{folder}: {e}")
        folders = {n[len(prefix):].split("/", 1)[0] for n in names if n.startswith(prefix) and "/" in n[len(prefix):]}
        problems += [f"{f}: in the zip but not in {METADATA}" for f in sorted(folders - set(map(str, listed)))]
    return Export(path, assignment, sorted(submissions, key=lambda s: s.name.casefold()), problems)


class _Loader(yaml.SafeLoader):
    """YAML's safe loader; a tag it does not know (a Ruby object, say) is read as the plain value it tags."""


_Loader.add_multi_constructor("!", lambda loader, _, node: (
    loader.construct_mapping(node) if isinstance(node, yaml.MappingNode) else
    loader.construct_sequence(node) if isinstance(node, yaml.SequenceNode) else loader.construct_scalar(node)))


def _metadata(archive: zipfile.ZipFile, name: str, path: Path) -> dict:
    try:
        data = yaml.load(_read(archive, name), Loader=_Loader)
    except yaml.YAMLError as e:
        where = f" at line {e.problem_mark.line + 1}" if getattr(e, "problem_mark", None) else ""
        raise ExportError(f"{path}: {name} does not parse as YAML{where}; download the export again") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ExportError(f"{path}: {name} is not a mapping of submission folders to their metadata")
    return data


def _read(archive: zipfile.ZipFile, name: str) -> bytes:
    """An entry's bytes, bounded as every submitted file is (nbtest.read_bounded)."""
    try:
        with archive.open(name) as member:
            return nbtest.read_bounded(member, nbtest.MAX_NOTEBOOK_BYTES, name)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, nbtest.NotebookError) as e:
        raise ExportError(f"{name} cannot be read ({e})") from None


def _field(record: dict, key: str):
    """A metadata field: Gradescope writes Ruby's symbols (":submitters"); a plain key is read too."""
    return record.get(f":{key}", record.get(key))


def _submission(archive: zipfile.ZipFile, names: set[str], prefix: str, folder: str, record: dict,
                assignment: str) -> Submission:
    base = f"{prefix}{folder}/"
    if f"{base}{RESULTS}" in names:
        try:
            doc = json.loads(_read(archive, f"{base}{RESULTS}"))
        except ValueError as e:
            raise ExportError(f"{RESULTS} is not JSON ({e})") from None
    elif isinstance(_field(record, "results"), dict):       # the metadata's own copy, where it has one
        doc = _field(record, "results")
    else:
        raise ExportError(f"no {RESULTS} (the autograder has not finished on it: rerun it on Gradescope)")
    notebooks = sorted(n for n in names if n.startswith(base) and n.endswith(".ipynb")
                       and not n.startswith(f"{base}results/") and ".ipynb_checkpoints/" not in n)
    people = _field(record, "submitters") or []
    submitters = tuple(Submitter(str(_field(p, "name") or ""), str(_field(p, "sid") or ""),
                                 str(_field(p, "email") or "")) for p in people if isinstance(p, dict))
    late = (doc.get("extra_data") or {}).get("late") if isinstance(doc, dict) else None
    return Submission(folder, submitters, to_result(doc, assignment),
                      _read(archive, notebooks[0]) if len(notebooks) == 1 else None,
                      int(late["days"]) if isinstance(late, dict) and "days" in late else None)


def to_result(doc: dict, assignment: str) -> Result:
    """results.json (results.py's to_gradescope) as the Result it was written from; ExportError for one this
    course's autograder did not write, one of another assignment, or one that graded nothing."""
    extra = doc.get("extra_data") if isinstance(doc, dict) else None
    if not isinstance(extra, dict) or "assignment" not in extra:
        raise ExportError(f"{RESULTS} was not written by this course's autograder")
    if extra["assignment"] != assignment:
        raise ExportError(f"{RESULTS} is of {extra['assignment']!r}, not {assignment}")
    try:
        tests = [t for t in doc.get("tests") or [] if WRITTEN_TAG not in (t.get("tags") or [])]
        entries = [TestResult(str(t["name"]), int(t["extra_data"]["part"]), _number(t["score"]),
                              int(t["max_score"]), str(t.get("output", "")), t["extra_data"].get("misconception"),
                              str(t["extra_data"].get("kind") or ""), False, _number(t["extra_data"].get("held", 0)),
                              str(t["extra_data"].get("id") or ""))
                   for t in tests]
        result = Result(assignment, int(extra["seed"]), entries,   # None: a run that graded nothing
                        review=tuple(map(str, extra.get("review") or ()))) if entries else None
    except (AttributeError, KeyError, TypeError, ValueError) as e:
        raise ExportError(f"{RESULTS} is not one this course's autograder writes ({type(e).__name__}: {e})") from None
    if result is None:
        raise ExportError(f"not graded: {str(doc.get('output', '')).split(': not graded: ', 1)[-1][:300]}")
    return result


def _number(value) -> int | float:
    """A score as results.json holds it; TypeError for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"a score is a number, not {value!r}")
    return value


class ExportQueue(Queue):
    """The review list of an export's results, by submitter: flagged ones, none decided (a decision is a
    manual regrade on Gradescope, which the next export shows)."""

    def __init__(self, export: Export):
        self.export, self.assignment, self.results_file = export, export.assignment, export.path
        self.keys = {s.name: s.id for s in export.submissions}

    @property
    def source(self) -> Path:
        return self.export.path

    def results(self) -> dict[str, Result]:
        return {s.name: s.result for s in self.export.submissions}

    def decision(self, who: str) -> None:
        return None

    def decide(self, who: str, verdict: str, note: str = "") -> Result:
        raise ReviewError(MANUAL)

    def summary(self) -> str:
        return review_summary(list(self.results().values()), self.assignment, self.export.path,
                              option="--gradescope-export")


def status_lines(export: Export) -> list[str]:
    """Where a Gradescope class stands, from its export: submissions, problems, late, held for review."""
    subs = export.submissions
    late = [s for s in subs if s.late_days]
    flagged = [s for s in subs if s.result.waiting]
    held = points(sum(s.result.held_points for s in flagged))
    return [
        f"{export.assignment} in {export.path} (Gradescope's Export Submissions)",
        f"read: {count(len(subs), 'submission')}, {count(sum(len(s.submitters) or 1 for s in subs), 'student')}",
        export.left_out(),
        f"late: {len(late)}: " + (", ".join(f"{shown(s.name, keep='')} {count(s.late_days, 'day')}" for s in late)
                                 or "none"),
        f"flagged for review: {count(len(flagged), 'submission')}, {count(held, 'point')} held: "
        + (", ".join(shown(s.name, keep="") for s in flagged) or "none")
        + (f" (python -m autograder review {export.assignment} --gradescope-export {export.path})" if flagged else ""),
    ]
