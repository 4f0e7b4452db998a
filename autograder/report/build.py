"""Write a class's report: report.html, CSVs, PNG charts, pairs/ and students/ (instructor/report/ASSIGNMENT/
for a class, classlist.class_report_dir).

    out = write_report(course, "residual-connections", students, class_report_dir("residual-connections"))
"""
from __future__ import annotations

import shutil
import time
from pathlib import Path

from .. import suites
from ..course import ROOT, SOLUTIONS, Course
from ..core.extract import Template
from ..nbgrading.answers import Questions
from . import page, similarity
from .classlist import Student
from .code import release_code, solution_code
from .summary import summarise

VIEWS = 30   # side-by-side files written, most similar pairs first (pairs.csv lists every pair)


def write_report(course: Course, assignment: str, students: list[Student], out: Path,
                 release: Path | None = None, results_file: Path | None = None,
                 results_option: str = "--results") -> dict[str, float]:
    """Write the report into `out` (emptied first); returns seconds spent: {"summary", "similarity", "total"}.
    results_file: the `grade --out` store (results_option "--results") or the Gradescope export
    ("--gradescope-export") the students' results came from, named in the review queue's line."""
    start = time.perf_counter()
    a = course.assignment(assignment)
    template = Template(a.notebook_path(SOLUTIONS), course.grading.max_cell_kb)
    release = release or a.notebook_path(ROOT / "assignments")
    if out.exists():
        shutil.rmtree(out)
    (out / "pairs").mkdir(parents=True)

    s = summarise(students)
    pngs = page.charts(s, out)
    questions = Questions(a.notebook_path(SOLUTIONS), course.grading.max_cell_kb, a.cell_points)
    mine = {}   # student -> (their view, written answers given, questions)
    (out / "students").mkdir()
    for i, st in enumerate(st for st in students if st.notebook is not None):
        answers = questions.answers(st.notebook)
        name = f"students/{i + 1:03d}.html"
        (out / name).write_text(page.student_view(assignment, st, answers), encoding="utf-8")
        mine[st.name] = name, sum(a.text is not None for a in answers), len(answers)
    summarised = time.perf_counter()

    codes = {st.name: code for st in students if st.notebook is not None
             and (code := solution_code(st.notebook, template)) is not None}
    prints = similarity.fingerprints(codes, release_code(release))
    rules = course.report
    listed = similarity.compare(prints, rules.similarity_threshold, rules.min_shared)
    views = {}
    for i, pair in enumerate(listed[:VIEWS]):
        name = f"pairs/{i + 1:03d}.html"
        (out / name).write_text(page.pair_view(assignment, pair, similarity.regions(prints, pair)),
                                encoding="utf-8")
        views[(pair.a, pair.b)] = name
    compared = time.perf_counter()

    settings = (f"Threshold {rules.similarity_threshold:g} (course.toml [report]): the larger share of one side's "
                f"code fingerprints found in the other, over at least {rules.min_shared} shared; a fingerprint is "
                f"{similarity.K} tokens of the code normalised so that names, literals, comments, no-op and dead "
                f"statements, the order of functions and cells, and loops written as comprehensions change "
                f"nothing. {len(codes)} notebooks compared.")
    page.write_csvs(s, listed, out)
    (out / "report.html").write_text(page.report_html(assignment, s, suites.misconceptions(assignment), pngs,
                                                      listed, views, settings, mine, results_file,
                                                      similarity.clusters(listed), results_option),
                                     encoding="utf-8")
    end = time.perf_counter()
    return {"summary": summarised - start, "similarity": compared - summarised, "total": end - start}
