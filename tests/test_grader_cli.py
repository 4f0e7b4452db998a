"""`python -m autograder grade` end to end: one notebook, a batch, resuming, bad names.

The commands run in this process (helpers.cli), except two that read what only an interpreter of its
own shows: stdout holding nothing but results, the progress bar on stderr."""
from __future__ import annotations

import csv
import fcntl
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from autograder.course import ROOT
from autograder.core.extract import Template
from autograder.grading.batch import notebooks
from autograder.results.result import Result
from autograder.results.store import Store
from helpers import cli

SAMPLES = ROOT / "submissions" / "residual-connections"
EXPECTED = json.loads((SAMPLES / "expected.json").read_text())["samples"]


def grade(*args: str) -> subprocess.CompletedProcess:
    """`python -m autograder grade ARGS` in this process (helpers.cli)."""
    return cli("grade", *args)


def grade_process(*args: str) -> subprocess.CompletedProcess:
    """The same in an interpreter of its own: for what only a process shows (its stdout apart from its stderr)."""
    return subprocess.run([sys.executable, "-m", "autograder", "grade", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_one_notebook_json_is_exactly_the_spec_object():
    proc = grade_process("residual-connections", str(SAMPLES / "pre-post-swapped.ipynb"), "--json", "--seed", "7")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)      # stdout holds the JSON alone, whatever a library prints
    assert list(result) == ["assignment", "score", "max_score", "seed", "tests"]   # docs/results.md, fixed
    assert result["seed"] == 7 and result["score"] == EXPECTED["pre-post-swapped.ipynb"]["score"]
    assert all(list(t) == ["name", "part", "score", "max_score", "output"] for t in result["tests"])
    assert "Pre/Post swapped" in json.dumps(result)
    again = json.loads(grade("residual-connections", str(SAMPLES / "pre-post-swapped.ipynb"), "--json",
                             "--seed", "7").stdout)
    assert again == result, "--seed must reproduce a grade exactly"


@pytest.mark.slow
def test_table_and_unreadable_file_exit_zero(tmp_path):
    junk = tmp_path / "essay.ipynb"
    junk.write_bytes(b"\x89PNG not a notebook")
    proc = grade("residual-connections", str(junk))
    assert proc.returncode == 0, proc.stderr
    assert "0 / 100" in proc.stdout and "could not read the notebook" in proc.stdout


@pytest.mark.slow
def test_unknown_assignment_exits_2_listing_valid_names():
    proc = grade("no-such-assignment", str(SAMPLES / "full-marks.ipynb"))
    assert proc.returncode == 2
    assert "unknown assignment 'no-such-assignment'" in proc.stderr and "residual-connections" in proc.stderr


def read_results(out: Path) -> list[dict]:
    """The result lines of a results store (its header and torn lines left out)."""
    lines = []
    for line in out.read_text().splitlines():
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return [r for r in lines if "submission" in r]


@pytest.mark.slow
def test_batch_writes_one_line_per_submission_and_resumes(tmp_path):
    """A folder of a few samples (the whole class's scores through the same batch grader: test_grader.py)."""
    out, folder = tmp_path / "results.jsonl", tmp_path / "class"
    folder.mkdir()
    names = sorted({sorted(EXPECTED)[0], "full-marks.ipynb", "wrong-answers.ipynb", "partly-right.ipynb",
                    "crash-at-import.ipynb"})
    for name in names:
        shutil.copy(SAMPLES / name, folder / name)
    # a run killed mid-write left one result and a torn line behind
    store = Store(out, "residual-connections", seed=11)
    first = folder / names[0]
    key = Template(ROOT / "solutions" / "residual-connections" / "residual-connections.ipynb").key(first)
    store.put(key, Result("residual-connections", 11, [], submission=str(first)))
    with out.open("a") as f:
        f.write('{"key": "torn')
    proc = grade_process("residual-connections", str(folder), "--out", str(out), "--timeout", "2")
    assert proc.returncode == 0, proc.stderr
    assert "1 graded before, skipped" in proc.stdout
    results = read_results(out)
    assert sorted(Path(r["submission"]).name for r in results) == names
    assert {r["seed"] for r in results} == {11}, "a resumed batch keeps the batch's seed"
    for r in results[1:]:
        assert r["score"] == EXPECTED[Path(r["submission"]).name]["score"], r["submission"]
    assert "[" in proc.stderr and "/" in proc.stderr   # the progress bar
    rerun = grade("residual-connections", str(folder), "--out", str(out))
    assert rerun.returncode == 0 and f"({len(names)} graded before, skipped)" in rerun.stdout
    assert len(read_results(out)) == len(names)


@pytest.mark.slow
def test_a_store_of_another_assignment_or_seed_is_refused(tmp_path):
    out = tmp_path / "results.jsonl"
    Store(out, "fused-add-norm", seed=3)
    proc = grade("residual-connections", str(SAMPLES / "full-marks.ipynb"), str(SAMPLES / "wrong-answers.ipynb"),
                 "--out", str(out))
    assert proc.returncode == 2 and "not a results file of residual-connections" in proc.stderr
    out.unlink()
    Store(out, "residual-connections", seed=3)
    proc = grade("residual-connections", str(SAMPLES / "full-marks.ipynb"), "--out", str(out), "--seed", "4")
    assert proc.returncode == 2 and "graded with seed 3" in proc.stderr


def test_a_store_another_process_is_making_is_waited_for_not_refused(tmp_path):
    """Class workers open the class's store at once: one that finds the file made but its header not yet
    written (the maker holds the lock) waits for it, then opens the store the maker wrote."""
    out = tmp_path / "results.jsonl"
    opened = []
    with open(out, "a+b") as maker:
        fcntl.flock(maker, fcntl.LOCK_EX)
        other = threading.Thread(target=lambda: opened.append(Store(out, "residual-connections")))
        other.start()
        other.join(0.5)
        assert other.is_alive()                    # waiting on the lock, not refusing an empty file
        maker.write(b'{"store": 2, "assignment": "residual-connections", "seed": 7, "secret_id": ""}\n')
        maker.flush()
        fcntl.flock(maker, fcntl.LOCK_UN)
    other.join(10)
    assert [store.seed for store in opened] == [7]
    assert out.read_text().count('"store"') == 1


@pytest.mark.slow
def test_review_of_a_grade_out_store_releases_and_confirms_by_file_name(tmp_path):
    """`grade --out` ends with the queue's line; `review --results FILE` lists the forged samples with their
    quoted lines and held points, records --release and --confirm in FILE by file name; the store and
    `report --results FILE` then read the decided scores; a name not in the store is refused, nothing recorded."""
    folder, out = tmp_path / "downloads", tmp_path / "results.jsonl"
    folder.mkdir()
    released, confirmed, honest = "forged-mutation-report.ipynb", "forged-gradients-report.ipynb", "full-marks.ipynb"
    for name in (released, confirmed, honest):
        shutil.copy(SAMPLES / name, folder / name)
    graded = grade("residual-connections", str(folder), "--out", str(out))
    assert graded.returncode == 0, graded.stderr
    command = f"python -m autograder review residual-connections --results {out}"
    assert graded.stdout.splitlines()[-1].startswith("review: 2 submissions of residual-connections in ")
    assert graded.stdout.splitlines()[-1].endswith(command)
    before = {Path(r.submission).name: r for r in Store(out, "residual-connections").submissions()}
    held = {name: before[name].held_points for name in (released, confirmed)}
    assert all(held.values()) and not before[honest].review, held

    def review(*args: str, status: int = 0) -> str:
        proc = cli("review", "residual-connections", "--results", out, *args)
        assert proc.returncode == status, proc.stdout + proc.stderr
        return proc.stdout + proc.stderr

    listed = review()
    for name in (released, confirmed):
        assert f"\n{name}  {before[name].score:g} / 100  WAITING for a decision" in listed
        assert all(f"found: {finding}" in listed for finding in before[name].review)
        assert f"0 of their {held[name]:g} points now" in listed
    assert honest not in listed and listed.splitlines()[-1].endswith(command)

    refused = review("--release", "nobody.ipynb", status=2)
    assert "nobody.ipynb: no submission of that name" in refused
    assert review("--release", honest, status=2).count("not flagged for review") == 1
    assert not any("decision" in json.loads(line) for line in out.read_text().splitlines())

    done = review("--release", released, "--confirm", confirmed, "--note", "looked at the notebook")
    assert f"{released}: released after an instructor's review: the {held[released]:g} points" in done
    assert f"{confirmed}: held, and confirmed" in done
    assert done.splitlines()[-1] == ("review: no submission of residual-connections in "
                                     f"{out} waits for an instructor's decision")
    want = {released: EXPECTED[released]["score"] + held[released], confirmed: EXPECTED[confirmed]["score"],
            honest: 100}
    assert {Path(r.submission).name: r.score for r in Store(out, "residual-connections").submissions()} == want
    report = cli("report", "residual-connections", "--results", out, "--out", tmp_path / "report")
    assert report.returncode == 0, report.stderr
    assert f"no submission of residual-connections in {out} waits" in report.stdout
    rows = {row["student"]: float(row["score"]) for row in csv.DictReader((tmp_path / "report" / "students.csv").open())}
    assert rows == {Path(name).stem: score for name, score in want.items()}, rows
    again = review()
    assert f"{released}  {want[released]:g} / 100  released" in again
    assert f"{confirmed}  {want[confirmed]:g} / 100  confirmed" in again and "(looked at the notebook)" in again


def test_a_failure_of_the_graders_on_one_submission_costs_it_alone(tmp_path, monkeypatch):
    """Grading one notebook of a batch raises in the grader: its classmates are graded and stored as they
    would be alone, it is listed as not graded (not stored, so the rerun grades it), and the exit status is 1."""
    from autograder.grading.grader import Grader
    folder, out = tmp_path / "class", tmp_path / "results.jsonl"
    folder.mkdir()
    for name in ("classmate", "broken"):            # unreadable: graded without a child, at once
        shutil.copy(SAMPLES / "invalid-json.ipynb", folder / f"{name}.ipynb")
    shutil.copy(SAMPLES / "exits-at-import.ipynb", folder / "another.ipynb")
    alone = {name: json.loads(grade("residual-connections", str(folder / f"{name}.ipynb"), "--json").stdout)
             for name in ("classmate", "another")}
    real = Grader.grade

    def grade_but_fail(self, path, seed=None):
        if Path(path).name == "broken.ipynb":
            raise RuntimeError("a fault of the grader's")
        return real(self, path, seed)

    monkeypatch.setattr(Grader, "grade", grade_but_fail)
    proc = grade("residual-connections", str(folder), "--out", str(out))
    assert proc.returncode == 1 and "1 not graded, the grader failed on each" in proc.stderr, proc.stderr
    assert "broken.ipynb" in proc.stdout and "  0 /" in proc.stdout
    stored = {Path(r["submission"]).stem: r for r in read_results(out)}
    assert sorted(stored) == ["another", "classmate"]
    for name, result in alone.items():
        assert [(t["name"], t["score"], t["output"]) for t in stored[name]["tests"]] == \
               [(t["name"], t["score"], t["output"]) for t in result["tests"]], name


def test_a_link_to_a_folder_is_given_as_the_file_it_is_not_followed(tmp_path):
    """A submission named X.ipynb that links to a folder (the course's solutions/) had every notebook below it
    graded under its name (red team 36): given on the command line, or found in a folder, it is a link, which
    the grader refuses as it refuses a link to a file."""
    (tmp_path / "solutions").mkdir()
    (tmp_path / "solutions" / "answer.ipynb").write_text("{}")
    (tmp_path / "upload").mkdir()
    (tmp_path / "upload" / "x.ipynb").symlink_to(tmp_path / "solutions", target_is_directory=True)
    assert notebooks([tmp_path / "upload" / "x.ipynb"]) == [tmp_path / "upload" / "x.ipynb"]
    assert notebooks([tmp_path / "upload"]) == [tmp_path / "upload" / "x.ipynb"]


def test_a_folder_gives_its_notebooks_whatever_the_extension_s_case(tmp_path):
    """A notebook renamed on Windows (NAME.IPYNB) was skipped with no word; checkpoints and other files are."""
    for name in ("b.ipynb", "A.IPYNB", "sub/c.Ipynb", "notes.txt", ".ipynb_checkpoints/b-checkpoint.ipynb"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("{}")
    assert [p.relative_to(tmp_path).as_posix() for p in notebooks([tmp_path])] == ["A.IPYNB", "b.ipynb", "sub/c.Ipynb"]


def test_a_folder_tree_deeper_than_python_recurses_still_gives_its_notebooks(tmp_path):
    """A tree 1,200 folders deep in one upload made Path.rglob raise RecursionError, and `grade FOLDER` and
    `answers FOLDER` died before any student (red team 38); a notebook beside it is still found, and one in it."""
    (tmp_path / "alice.ipynb").write_text("{}")
    deep = tmp_path
    for _ in range(1200):       # each made by hand: Path.mkdir(parents=True) recurses too
        deep = deep / "d"
        deep.mkdir()
    hidden = deep / "hidden.ipynb"
    hidden.write_text("{}")
    try:
        found = notebooks([tmp_path])
    finally:     # taken down by hand, deepest first: pytest's cleanup (shutil.rmtree) recurses too
        hidden.unlink()
        while deep != tmp_path:
            deep.rmdir()
            deep = deep.parent
    assert found == [tmp_path / "alice.ipynb", hidden]


def test_a_name_of_bytes_that_are_no_utf8_gets_a_key(tmp_path):
    """A folder or a dangling link named in Latin-1 (b"\\xe9ve.ipynb") in a batch: its key hashed its name as UTF-8,
    which raised, and no student of the batch was graded (red team 38)."""
    from autograder.core.extract import unreadable_key
    folder = Path(os.fsdecode(bytes(tmp_path) + b"/\xe9ve.ipynb"))
    folder.mkdir()
    link = Path(os.fsdecode(bytes(tmp_path) + b"/\xff.ipynb"))
    link.symlink_to(tmp_path / "nowhere")
    assert len({unreadable_key(folder), unreadable_key(link)}) == 2
