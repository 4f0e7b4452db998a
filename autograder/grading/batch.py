"""Grade one notebook, or many in parallel into a results store.

    grade_notebook("residual-connections", path, course, seed=None) -> Result
    grade_many("residual-connections", paths, course, store=Store(...)) -> list[Result]
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path

from ..course import SOLUTIONS, Course
from ..core.extract import Template
from ..results.render import Progress
from ..results.result import Result
from ..results.store import Store


class NotAllGraded(Exception):
    """Grading failed in the grader itself on some submissions, each alone: `results` holds every
    submission's, theirs saying why, and none of theirs is stored, so that a rerun grades them."""

    def __init__(self, results: list[Result], failed: list[str]):
        super().__init__(f"{len(failed)} not graded, the grader failed on each ({', '.join(failed)}); "
                         "run the command again for them")
        self.results, self.failed = results, failed


def grade_notebook(assignment: str, path: str | Path, course: Course, seed: int | None = None, *,
                   timeout_s: float | None = None, fork: bool = False) -> Result:
    """Grade one notebook, its parts in parallel on the machine's cores. fork: see Grader (the command line sets
    it: its process holds only this one path)."""
    from .grader import Grader   # torch and the fork server only when grading
    with Grader(assignment, course, timeout_s=timeout_s, fork=fork, parts_at_once=os.cpu_count() or 1) as grader:
        return grader.grade(path, seed)


def grade_many(assignment: str, paths: list[str | Path], course: Course, store: Store | None = None,
               seed: int | None = None, *, workers: int | None = None, timeout_s: float | None = None,
               progress: bool = False) -> list[Result]:
    """Grade notebooks in parallel; returns this call's results, each with its `submission`. A failure of
    the grader's on one submission costs that one alone: the rest are graded, then NotAllGraded is raised.

    With a store, a submission it holds already is skipped, code graded before (the same
    key) is not graded again, inputs come from the store's seed if it was made with --seed
    (else from each notebook's own derived seed), and every new result is kept the moment it
    exists: an interrupted batch loses nothing and resumes.
    """
    from .grader import Grader   # torch and the fork server only when grading
    paths = [str(p) for p in dict.fromkeys(map(str, paths)) if not (store and store.has(p))]
    if store is not None:
        seed = store.seed
    results: list[Result] = []
    if not paths:
        return results
    template = Template(course.assignment(assignment).notebook_path(SOLUTIONS), course.grading.max_cell_kb)
    keys = {path: template.key(Path(path)) for path in paths}
    todo = [p for p in paths if not (store and store.get(keys[p]))]
    for path in paths:
        if path not in todo:             # the same code, graded before under another name
            results.append(_keep(store, keys[path], replace(store.graded(keys[path]), submission=path)))
    bar = Progress(len(todo)) if progress and todo else None
    failed = []
    if todo:
        with Grader(assignment, course, timeout_s=timeout_s) as grader, \
                ThreadPoolExecutor(workers or course.grading.graders()) as pool:
            futures = {pool.submit(grader.grade, path, seed): path for path in todo}
            try:
                for future in as_completed(futures):
                    path = futures[future]
                    try:
                        graded = future.result()
                    except Exception as e:     # noqa: BLE001 - the grader failed on this one: it alone goes ungraded
                        failed.append(path)
                        why = f"the grader failed on it ({type(e).__name__}: {e}); run the command again"
                        result = replace(grader.not_graded(why), submission=path)
                    else:
                        result = _keep(store, keys[path], replace(graded, submission=path))
                    results.append(result)
                    if bar:
                        bar.update(f"{result.score}/{result.max_score} {path}")
            except BaseException:      # Ctrl-C or a broken grader: stop the children, keep what is stored
                pool.shutdown(wait=False, cancel_futures=True)
                grader.close()
                raise
    order = {path: i for i, path in enumerate(paths)}
    results.sort(key=lambda r: order[r.submission])
    if failed:
        raise NotAllGraded(results, failed)
    return results


def _keep(store: Store | None, key: str, result: Result) -> Result:
    if store is not None:
        store.put(key, result)
    return result


def notebooks(paths: list[Path]) -> list[Path]:
    """Files as given; folders replaced by the .ipynb files below them, the extension in any case (a download
    renamed on Windows: NAME.IPYNB), checkpoints left out. A link to a folder is given as the file it is, which
    the grader refuses as it refuses a link to a file: followed, a submission named X.ipynb that links to the
    course's solutions/ had the solutions graded under its name."""
    out = []
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            out += sorted(p for p in _below(path) if p.suffix.lower() == ".ipynb")
        else:
            out.append(path)
    return out


def _below(folder: Path) -> list[Path]:
    """Every entry below folder, links not followed, checkpoint folders left out; walked with a list, not a
    recursion: a tree 1,500 folders deep in one upload made Path.rglob raise RecursionError, and no student of
    the batch was graded (red team 38)."""
    found, todo = [], [folder]
    while todo:
        try:
            entries = list(os.scandir(todo.pop()))
        except OSError:        # unreadable, or gone since: what it holds is no one's notebook
            continue
        for entry in entries:
            if entry.name == ".ipynb_checkpoints":
                continue
            found.append(Path(entry.path))
            if entry.is_dir(follow_symlinks=False):
                todo.append(entry.path)
    return found
