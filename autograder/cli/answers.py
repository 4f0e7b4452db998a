"""python -m autograder answers ASSIGNMENT FOLDER: one PDF of written answers per submitted notebook.

    python -m autograder answers residual-connections downloads/ [--out dist/answers/residual-connections]

For a Gradescope PDF assignment that holds the written questions (docs/gradescope.md): each
notebook under FOLDER gets OUT/ITS/PATH.pdf, each question on its own page. A notebook that
cannot be read still gets its PDF, each answer saying why; the exit status is 1 only when a
PDF could not be written.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..course import ROOT, SOLUTIONS
from ..results.terminal import shown


def add_parser(commands) -> None:
    p = commands.add_parser("answers", help="one PDF of written answers per submission (Gradescope PDF upload)",
                            description=__doc__.split("\n\n")[0].split(": ", 1)[1])
    p.add_argument("assignment", help="an assignment named in course.toml")
    p.add_argument("folder", type=Path, help="a folder of submitted notebooks (searched recursively)")
    p.add_argument("--out", type=Path, help="where to write (default: dist/answers/ASSIGNMENT/)")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..lms.gradescope.pdf import write_folder   # fpdf2 and the fonts only for this command
    from ..nbgrading.answers import Questions
    a = args.course.assignment(args.assignment)     # an unknown name stops here, listing the valid ones
    if not args.folder.is_dir():
        print(f"error: {args.folder}: no such folder (give the folder the notebooks were downloaded to)",
              file=sys.stderr)
        return 2
    questions = Questions(a.notebook_path(SOLUTIONS), args.course.grading.max_cell_kb, a.cell_points)
    if not questions.questions:
        print(f"error: {args.assignment} has no written questions (nbgrader's manually graded markdown cells)",
              file=sys.stderr)
        return 2
    out = args.out or ROOT / "dist" / "answers" / args.assignment
    written, failed = write_folder(questions, args.folder, out, args.assignment)
    for pdf, pages in written.items():
        print(shown(f"{pages:>3} pages  {pdf}", keep=""))      # named for the student's notebook: one line
    for nb, why in failed.items():
        print(shown(f"error: {nb}: no PDF written ({why})", keep=""), file=sys.stderr)
    if not written and not failed:
        print(f"error: no notebooks in {args.folder}", file=sys.stderr)
        return 2
    print(f"{len(written)} PDFs of {len(questions.questions)} written questions in {out}")
    return 1 if failed else 0
