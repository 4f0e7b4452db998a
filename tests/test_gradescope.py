"""Gradescope: the autograder zip, runs of it in a tree laid out like Gradescope's, and results.json.

The end-to-end tests grade every sample submission of both assignments through the zip's own
run_autograder (all of an assignment's samples in one run: it takes several roots) and compare
each test's score with `python -m autograder grade` at the same seed. The grading machine runs
as root, as Gradescope does; student code runs as nobody (uid 65534).
"""
import csv
import json
import os
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from autograder import course as course_mod
from autograder.lms.gradescope.build import GRADING_NEEDS, build, course_toml
from autograder.lms.gradescope.export import to_result
from autograder.lms.gradescope.late import lateness
from autograder.lms.gradescope.results import not_graded, to_gradescope
from autograder.lms.gradescope.run import NoNotebook, closed_folders, pick_notebook
from autograder.nbgrading.answers import Questions
from autograder.results.result import Result, not_run
from autograder.results.result import TestResult as Entry   # not collected as a test class
from helpers import COURSE, NAMES, ROOT, SAMPLE_TIMEOUT_S, SampleClass, cli, sample_generator, write_export

SCHEMA = Draft202012Validator(json.loads((Path(__file__).parent / "gradescope_results.schema.json").read_text()))
STUDENT = "nobody"
ON_TIME = "2027-01-20T10:00:00.000000+00:00"


def assert_valid(doc: dict) -> None:
    """Gradescope's format (the schema), and what the schema cannot say: no score above its maximum."""
    errors = [f"{list(e.path)}: {e.message}" for e in SCHEMA.iter_errors(doc)]
    assert not errors, errors
    tests = doc.get("tests", [])
    assert all(0 <= t["score"] <= t["max_score"] for t in tests), tests
    assert not tests or doc["score"] <= sum(t["max_score"] for t in tests)


def metadata(seed: int, created_at: str = ON_TIME, previous: int = 0) -> dict:
    """submission_metadata.json as Gradescope writes it (the fields we read, and some we do not)."""
    return {"id": seed, "created_at": created_at, "submission_method": "upload",
            "assignment": {"due_date": "2027-02-15T23:59:00.000000+00:00", "late_due_date": None, "title": "A"},
            "users": [{"email": "s@example.com", "id": 1, "name": "S"}],
            "previous_submissions": [{"submission_time": ON_TIME, "score": 1.0, "results": {}}] * previous}


@pytest.fixture(scope="module")
def zips(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    return {name: build(COURSE, name, out) for name in NAMES}


def unpack(zip_path: Path, dest: Path) -> None:
    """As Gradescope unpacks the zip into /autograder/source: files with their modes."""
    with zipfile.ZipFile(zip_path) as zf:
        for info in zf.infolist():
            zf.extract(info, dest)
            os.chmod(dest / info.filename, info.external_attr >> 16 & 0o777)


def lay_out(root: Path, zip_path: Path, meta: dict, uploads: dict[str, bytes]) -> Path:
    """A tree like Gradescope's /autograder: source/ (the zip), submission/, submission_metadata.json."""
    unpack(zip_path, root / "source")
    (root / "submission").mkdir(parents=True)
    for name, data in uploads.items():
        (root / "submission" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "submission" / name).write_bytes(data)
    (root / "submission_metadata.json").write_text(json.dumps(meta))
    return root


def opened_python(command: list[str], tmp: Path) -> list[str]:
    """command, in a private mount namespace where each folder that hides this Python from other users
    (a pyenv under /root, a clone in a 0700 folder: mode 0700) is replaced by a 0711 one holding only
    what leads to the Python and its venv, as on Gradescope, where Python lives under /usr. The host's
    folders keep their modes."""
    closed = closed_folders()
    nested = [(a, b) for a in closed for b in closed if a in b.parents]
    assert not nested, f"cannot open up a closed folder inside another for the student user: {nested}"
    prefixes = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    kept = sorted({hide / p.relative_to(hide).parts[0] for hide in closed for p in prefixes if hide in p.parents})
    saves = [tmp / str(i) for i in range(len(kept))]
    script = " && ".join([*(f'mkdir "{save}" && mount --bind "{keep}" "{save}"' for keep, save in zip(kept, saves)),
                          *(f'mount -t tmpfs -o mode=0711 tmpfs "{hide}"' for hide in closed),
                          *(f'mkdir "{keep}" && mount --bind "{save}" "{keep}"' for keep, save in zip(kept, saves)),
                          'exec "$@"'])
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", *command] if closed else command


def simulate(roots: list[Path], python: str = sys.executable, timeout: float = 1800) -> list[dict]:
    """AUTOGRADER_ROOT=ROOT bash ROOT/source/run_autograder [MORE_ROOTS]; each root's results.json."""
    env = {**os.environ, "AUTOGRADER_ROOT": str(roots[0]), "AUTOGRADER_PYTHON": python,
           "AUTOGRADER_STUDENT_USER": STUDENT}
    mountpoint = roots[0].parent / f".{roots[0].name}-python"
    mountpoint.mkdir()
    command = ["bash", str(roots[0] / "source" / "run_autograder"), *map(str, roots[1:])]
    done = subprocess.run(opened_python(command, mountpoint), env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads((root / "results" / "results.json").read_text()) for root in roots]


# ------------------------------------------------------------------ the zip

@pytest.mark.parametrize("name", NAMES)
def test_zip_holds_the_scripts_package_and_this_assignment_only(zips, name):
    a = COURSE.assignment(name)
    other = next(n for n in NAMES if n != name)
    with zipfile.ZipFile(zips[name]) as zf:
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
        req = zf.read("requirements.txt").decode()
        trimmed = tomllib.loads(zf.read("course.toml").decode())
    top = {n for n in modes if "/" not in n}
    assert top == {"setup.sh", "run_autograder", "requirements.txt", "course.toml", "exceptions.json"}
    assert modes["setup.sh"] == modes["run_autograder"] == 0o100755
    assert all(mode == 0o100644 for n, mode in modes.items() if n not in ("setup.sh", "run_autograder"))
    assert {n for n in modes if n.startswith("solutions/")} == {f"solutions/{name}/{a.notebook}",
                                                                 f"solutions/{name}/contract.toml"}
    assert f"autograder/suites/{name.replace('-', '_')}/suite.py" in modes
    assert not [n for n in modes if other.replace("-", "_") in n or other in n], "the other assignment leaked in"
    assert not [n for n in modes if "__pycache__" in n or n.endswith(".pyc")]
    assert {"nbtest/__init__.py", "nbtest/policy.py", "autograder/__main__.py"} <= set(modes)
    assert list(trimmed["assignments"]) == [name]
    assert trimmed["assignments"][name] == tomllib.loads((ROOT / "course.toml").read_text())["assignments"][name]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert req.splitlines() == [next(d for d in project if re.match(rf"{n}\b", d)) for n in GRADING_NEEDS]


def test_setup_sh_parses_and_installs_the_projects_pins(zips, tmp_path):
    unpack(zips[NAMES[0]], tmp_path)
    for script in ("setup.sh", "run_autograder"):
        done = subprocess.run(["bash", "-n", str(tmp_path / script)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert os.access(tmp_path / script, os.X_OK)
    setup = (tmp_path / "setup.sh").read_text()
    pins = (tmp_path / "requirements.txt").read_text().splitlines()
    assert "torch==2.13.0" in pins      # pyproject.toml's pin, installed from the CPU index:
    assert "--index-url https://download.pytorch.org/whl/cpu" in setup and "grep -E '^torch\\b'" in setup
    assert re.search(r"pip install -r \"\$SOURCE/requirements.txt\"", setup)
    assert "adduser student" in setup and "python3.11" in setup
    # the torch line setup.sh greps for is the pin itself
    torch = subprocess.run(["grep", "-E", r"^torch\b", str(tmp_path / "requirements.txt")], capture_output=True, text=True)
    assert torch.stdout.strip() == "torch==2.13.0"


def test_course_toml_cut_refuses_what_it_cannot_cut():
    text = (ROOT / "course.toml").read_text()
    assert "fused-add-norm" not in course_toml(text, "residual-connections")
    assert "canvas" not in tomllib.loads(course_toml(text, "residual-connections"))   # its ids name both
    dotted = text + '\n[assignments]\nextra.notebook = "x.ipynb"\n'
    with pytest.raises(course_mod.CourseError, match="could not cut it down"):
        course_toml(dotted, "residual-connections")


# ------------------------------------------------------------------ Result -> results.json

def sample_result(rule: str) -> Result:
    graded = [Entry("a works", 1, 2, 2, "passed"), Entry("b works", 1, 0, 3, "wrong: got 1 expected 2"),
              Entry("c works", 2, 5, 5, "passed")]
    return Result("fused-add-norm", 11, [*graded, not_run("timing", 3, 10, rule, graded)])


@pytest.mark.parametrize("rule", ["redistribute", "skip"])
def test_mapping_keeps_every_score_and_marks_a_test_not_run(rule):
    result = sample_result(rule)
    doc = to_gradescope(result, visibility="after_published", execution_time=3.21)
    assert_valid(doc)
    assert [(t["name"], t["score"], t["max_score"], t["output"]) for t in doc["tests"]] == \
        [(t.name, t.score, t.max_score, t.output) for t in result.tests]
    assert [t["number"] for t in doc["tests"]] == ["1.1", "1.2", "2.1", "3.1"]
    assert [t["status"] for t in doc["tests"]] == ["passed", "failed", "passed", "passed"]
    assert doc["tests"][3]["tags"] == ["part 3", "not run"] and f'without_cuda = "{rule}"' in doc["tests"][3]["output"]
    assert {t["visibility"] for t in doc["tests"]} == {"after_published"}
    assert doc["score"] == result.score == (7 + 7 * 10 / 10 if rule == "redistribute" else 7)


def test_late_penalty_comes_off_the_total_only():
    a = COURSE.assignment("fused-add-norm")
    late = lateness(metadata(1, "2027-03-10T00:30:00+00:00", previous=2) | {"assignment": {}}, a, "late_per_day")
    assert (late.days, late.penalty, late.previous) == (2, 2 * a.late_per_day, 2)   # course.toml's deadline counts
    doc = to_gradescope(sample_result("skip"), visibility="visible", late=late)
    assert_valid(doc)
    assert doc["score"] == 0 and doc["extra_data"]["auto_score"] == 7                  # 7 - 10, not below 0
    assert "Submission 3" in doc["output"] and "2 started day(s)" in doc["output"]
    on_time = lateness(metadata(1), a, "late_per_day")
    assert on_time.days == 0 and to_gradescope(sample_result("skip"), visibility="visible", late=on_time)["score"] == 7
    just_late = lateness(metadata(1, "2027-02-16T00:00:00+00:00"), a, "late_per_day")   # Gradescope's due date counts
    assert (just_late.days, just_late.penalty) == (1, a.late_per_day)
    assert lateness(metadata(1, "2027-02-20T00:00:00+00:00"), a, "none") is None


def test_schema_catches_wrong_documents():
    good = to_gradescope(sample_result("redistribute"), visibility="visible")
    for spoil in ({"status": "pass"}, {"visibility": "after_due"}, {"score": "2"}, {"number": "part 1"},
                  {"output_format": "markdown"}, {"points": 2}):
        bad = json.loads(json.dumps(good))
        bad["tests"][0].update(spoil)
        assert list(SCHEMA.iter_errors(bad)), spoil
    assert_valid(not_graded("residual-connections", "no notebook"))


def test_pick_notebook(tmp_path):
    (tmp_path / "deep" / ".ipynb_checkpoints").mkdir(parents=True)
    (tmp_path / "deep" / ".ipynb_checkpoints" / "mine-checkpoint.ipynb").write_text("{}")
    (tmp_path / "notes.pdf").write_text("")
    with pytest.raises(NoNotebook, match="no notebook .* only: .*notes.pdf"):
        pick_notebook(tmp_path)
    (tmp_path / "deep" / "any name.IPYNB").write_text("{}")         # renamed on Windows: taken too
    assert pick_notebook(tmp_path) == tmp_path / "deep" / "any name.IPYNB"
    (tmp_path / "second.ipynb").write_text("{}")
    with pytest.raises(NoNotebook, match="2 notebooks were uploaded"):
        pick_notebook(tmp_path)


def test_run_autograder_writes_results_when_python_cannot_start(zips, tmp_path):
    root = lay_out(tmp_path / "ag", zips[NAMES[0]], metadata(1), {"x.ipynb": b"{}"})
    [doc] = simulate([root], python=str(tmp_path / "no-such-python"), timeout=60)
    assert_valid(doc)
    assert doc["score"] == 0 and "stopped before grading" in doc["output"]


# ------------------------------------------------------------------ end to end

CHEATS = {   # name: what the submission tries at import; residual_add works only if it succeeded
    "writes-results": "Path(ROOT, 'results', 'results.json').write_text('{\"score\": 75}')",
    "reads-suite": "Path(ROOT, 'source', 'autograder', 'suites', 'residual_connections', 'suite.py').read_text()",
    "reads-source-notebook": "Path(ROOT, 'source', 'solutions', 'residual-connections', "
                             "'residual-connections.ipynb').read_text()",
    "runs-as-root": "assert os.getuid() == 0",
    "control-reads-etc": "Path('/etc/passwd').read_text()",   # allowed: shows a cheat that works scores
}
# the notebook the cheats and the hostile written answer extend: Parts 1 and 2 solved (residual_add as the
# reference's, its written answer's cell), the rest stubs, so that no run trains a model the checks never read
CHEAT_BASE = "partly-right.ipynb"
CHEAT_CELL = '''
import os
from pathlib import Path
ROOT = {root!r}
_honest_residual_add = residual_add
try:
    {attempt}
    _CHEATED = True
except Exception:
    _CHEATED = False


def residual_add(x, fx):
    if not _CHEATED:
        raise RuntimeError("the cheat failed")
    return _honest_residual_add(x, fx)
'''


def cheat_notebook(root: Path, attempt: str) -> bytes:
    """CHEAT_BASE with residual_add's cell extended by a cheat (residual_add works iff it worked)."""
    nb = json.loads((ROOT / "submissions" / "residual-connections" / CHEAT_BASE).read_text())
    cell = next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "residual_add")
    cell["source"] = "".join(cell["source"]) + CHEAT_CELL.format(root=str(root), attempt=attempt)
    return json.dumps(nb).encode()


def hostile_answer(notebook: Path) -> bytes:
    """The notebook with a script, odd unicode and 200,000 characters as its Part 2 written answer."""
    nb = json.loads(notebook.read_text())
    cell = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "part2-written")
    cell["source"] = ('<script>alert("x")</script> [a](javascript:alert(1)) \u202eevil\x00 𝔘𝔫𝔦\n\n'
                      + "Long. " * 40_000)
    return json.dumps(nb).encode()


def sample_roots(samples: SampleClass, graded: dict[str, dict]) -> list[str]:
    """The samples run through Gradescope's runner: what it adds to the batch grader (late days, written
    answers, results.json) is the same for every notebook, so a sixth of them (every sixth by name),
    each sample that shows an entry kind (passed, held, timed out...) none of those shows, and those
    the other tests read: full-marks, invalid-json and the written answers' (the class's WRITTEN)."""
    names = sorted(samples.expected)
    picked = set(names[::6]) | {"full-marks.ipynb", "invalid-json.ipynb"} & set(names)
    picked |= {f"{s}.ipynb" for s in sample_generator(samples.assignment).WRITTEN}
    shown = {t["kind"] for s in picked for t in graded[s]["tests"]}
    for name in names:
        kinds = {t["kind"] for t in graded[name]["tests"]}
        if kinds - shown:
            picked.add(name)
            shown |= kinds
    return sorted(picked)


def with_sample_timeout(course_file: Path) -> None:
    """The zip's course.toml with SAMPLE_TIMEOUT_S per hidden test, as sample_results grades: a sample that
    hangs waits out the same limit on both paths (course.toml's would cost each hanging test 7 s more)."""
    text, found = re.subn(r"^timeout_s = .*$", f"timeout_s = {SAMPLE_TIMEOUT_S}", course_file.read_text(), flags=re.M)
    assert found == 1, "course.toml's [grading] timeout_s is gone"
    course_file.write_text(text)


@pytest.fixture(scope="module")
def class_runs(tmp_path_factory, zips, sample_results):
    """{assignment: (samples, {root name: results.json}, {sample: its result from the batch grader})} for
    sample_roots' samples, run once per assignment; the batch grader's are conftest.py's sample_results,
    with the same seed and per-test timeout."""
    runs = {}

    def run(name: str):
        if name not in runs:
            samples = SampleClass(name)
            everyone = sample_results(name)[1]
            graded = {s: everyone[s] for s in sample_roots(samples, everyone)}
            base = tmp_path_factory.mktemp(f"gs-{name}")
            roots = {s: lay_out(base / s, zips[name], metadata(samples.seed), {"mine.ipynb": (samples.folder / s).read_bytes()})
                     for s in graded}
            roots["late.ipynb"] = lay_out(base / "late", zips[name], metadata(samples.seed, "2027-03-10T12:00:00+00:00", 1),
                                          {"mine.ipynb": (samples.folder / "full-marks.ipynb").read_bytes()})
            roots["no-notebook"] = lay_out(base / "no-notebook", zips[name], metadata(samples.seed), {"mine.py": b"x = 1"})
            if name == "residual-connections":
                roots["hostile-answer"] = lay_out(base / "hostile-answer", zips[name], metadata(samples.seed),
                                                  {"mine.ipynb": hostile_answer(samples.folder / CHEAT_BASE)})
                for cheat, attempt in CHEATS.items():
                    root = base / cheat
                    roots[cheat] = lay_out(root, zips[name], metadata(samples.seed), {"nb.ipynb": cheat_notebook(root, attempt)})
            for root in roots.values():
                with_sample_timeout(root / "source" / "course.toml")
            docs = dict(zip(roots, simulate(list(roots.values()))))
            runs[name] = samples, docs, roots, graded
        return runs[name]
    return run


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_samples_score_as_the_batch_grader_does(class_runs, name):
    samples, docs, _, graded = class_runs(name)
    assert len(graded) >= len(samples.expected) / 6
    for sample, want in graded.items():
        doc = docs[sample]
        assert_valid(doc)
        tests = auto(doc)
        got = [(t["name"], t["score"], t["max_score"]) for t in tests]
        assert got == [(t["name"], t["score"], t["max_score"]) for t in want["tests"]], f"{sample}, seed {samples.seed}"
        assert doc["score"] == doc["extra_data"]["auto_score"] == want["score"]      # on time: no penalty
        assert doc["extra_data"]["seed"] == samples.seed
        samples.assert_expected(sample, to_result(doc, name).to_store())     # read back as an export is: by id
    samples.assert_no_source({s: {"tests": auto(docs[s])} for s in graded})


def auto(doc: dict) -> list[dict]:
    """results.json's hidden tests' entries, without the written answers'."""
    return [t for t in doc["tests"] if "written answer" not in t["tags"]]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_sample_shows_each_written_answer(class_runs, name):
    """One entry per written question, after its part's tests, with the student's own text."""
    samples, docs, _, graded = class_runs(name)
    questions = Questions(COURSE.assignment(name).notebook_path(ROOT / "solutions")).questions
    given = sample_generator(name).WRITTEN
    for sample in graded:
        doc = docs[sample]
        written = [t for t in doc["tests"] if "written answer" in t["tags"]]
        assert [t["extra_data"]["grade_id"] for t in written] == [q.grade_id for q in questions], sample
        parts = [t["extra_data"]["part"] for t in doc["tests"]]
        assert all(parts[doc["tests"].index(t) - 1] == t["extra_data"]["part"] for t in written), \
            f"{sample}: an answer is not after its part's tests: {parts}"
        for t, q in zip(written, questions):
            assert (t["score"], t["max_score"], t["visibility"]) == (0, 0, "after_published")
            assert t["tags"] == [f"part {q.part}", "written answer", f"{q.points:g} manual points"]
            text = given.get(sample.removesuffix(".ipynb"), {}).get(q.grade_id)
            if text is None:
                why = "Not read: mine.ipynb" if sample == "invalid-json.ipynb" else "Not answered: "
                assert not t["extra_data"]["answered"] and why in t["output"], (sample, q.grade_id)
            else:
                assert t["extra_data"]["answered"], (sample, q.grade_id)
                assert all(w in t["output"] for w in re.findall(r"[A-Za-z]{6,}", re.sub(r"\$[^$]*\$", " ", text)))
    assert {f"{s}.ipynb" for s in given} <= set(graded)
    hostile = docs.get("hostile-answer")
    if hostile:
        assert_valid(hostile)
        [entry] = [t for t in hostile["tests"] if t.get("extra_data", {}).get("grade_id") == "part2-written"]
        assert "<script" not in entry["output"] and "&lt;script&gt;" in entry["output"]
        assert "\u202e" not in entry["output"] and "Cut at 20,000" in entry["output"]
        assert len(entry["output"]) < 120_000


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_late_and_unreadable_uploads_get_results_json(class_runs, name):
    samples, docs, _, graded = class_runs(name)
    late, full = docs["late.ipynb"], graded["full-marks.ipynb"]
    assert_valid(late)
    a = COURSE.assignment(name)
    assert late["extra_data"]["late"]["days"] == 23 and late["extra_data"]["late"]["previous"] == 1
    assert late["score"] == max(0, full["score"] - 23 * a.late_per_day)
    assert [t["score"] for t in auto(late)] == [t["score"] for t in full["tests"]]
    assert_valid(docs["no-notebook"])
    assert docs["no-notebook"]["score"] == 0 and "only: mine.py" in docs["no-notebook"]["output"]


@pytest.mark.slow
def test_student_code_can_neither_write_results_nor_read_the_suites(class_runs):
    _, docs, roots, graded = class_runs("residual-connections")
    full = {t["name"]: t["score"] for t in graded["full-marks.ipynb"]["tests"]}
    by_id = {t["id"]: t["score"] for t in graded["full-marks.ipynb"]["tests"]}
    assert all(SampleClass("residual-connections").expected[CHEAT_BASE]["tests"][n] == by_id[n] for n in by_id
               if n.startswith("residual_add")), f"{CHEAT_BASE}'s residual_add is not the reference's"
    for cheat in CHEATS:
        doc = docs[cheat]
        assert_valid(doc)
        mine = {t["name"]: t["score"] for t in doc["tests"] if t["name"].startswith("residual_add")}
        assert len(mine) >= 5
        if cheat.startswith("control"):
            # the harness's `import os` breaks the static policy, which holds the tests that trust the
            # child (issue 11); the others show that a cheat that works scores
            free = {t["name"] for t in doc["tests"] if t["name"] in mine
                    and not t["output"].startswith("held for an instructor's review")}
            assert len(free) >= 2 and {n: mine[n] for n in free} == {n: full[n] for n in free}, \
                "the cheat harness itself is broken"
        else:
            assert set(mine.values()) == {0}, f"{cheat} worked: {mine}"
        assert sorted(p.name for p in (roots[cheat] / "results").iterdir()) == ["results.json"]
    assert (roots["writes-results"] / "results" / "results.json").stat().st_uid == 0


def test_a_python_other_users_cannot_enter_is_named(tmp_path, monkeypatch):
    (tmp_path / "hidden" / "python").mkdir(parents=True)
    os.chmod(tmp_path / "hidden", 0o700)
    monkeypatch.setattr(sys, "base_prefix", str(tmp_path / "hidden" / "python"))
    assert tmp_path / "hidden" in closed_folders()
    os.chmod(tmp_path / "hidden", 0o711)
    assert tmp_path / "hidden" not in closed_folders()


def test_a_grader_that_cannot_start_leaves_a_results_json_saying_so(tmp_path, monkeypatch):
    from autograder.lms.gradescope import run
    root = tmp_path / "ag"
    for folder in ("source", "submission"):
        (root / folder).mkdir(parents=True)
    monkeypatch.setattr(run, "closed_folders", lambda: [])
    with pytest.raises(course_mod.CourseError, match="no user 'no-such-student'"):
        run.grade_roots(COURSE, [root], "no-such-student", NAMES[0])
    doc = json.loads((root / "results" / "results.json").read_text())
    assert_valid(doc)
    assert doc["score"] == 0 and "could not start" in doc["output"] and "no-such-student" in doc["output"]
    assert (root / "source").stat().st_mode & 0o777 == (root / "results").stat().st_mode & 0o777 == 0o700


@pytest.mark.slow
def test_an_export_of_the_runs_reads_back_as_the_local_grading(class_runs, sample_results, tmp_path):
    """The simulated runs, zipped as Gradescope's Export Submissions: the report has the local grading's
    per-test pass rates, misconceptions and review list for the same notebooks, and review lists the same
    flagged submissions; the run that graded nothing is left out, named."""
    name = "residual-connections"
    samples, docs, roots, graded = class_runs(name)
    runs = {s: f"submission_{i}" for i, s in enumerate([*graded, "no-notebook"], 1)}
    export = write_export(tmp_path / "export.zip", {
        folder: ([(s.removesuffix(".ipynb"), folder.split("_")[1])], docs[s],
                 {p.name: p.read_bytes() for p in (roots[s] / "submission").iterdir()})
        for s, folder in runs.items()})
    local = tmp_path / "local"
    local.mkdir()
    for s in graded:
        (local / s).write_bytes((samples.folder / s).read_bytes())
    done = cli("report", name, "--gradescope-export", export, "--out", tmp_path / "gs")
    assert done.returncode == 0, done.stderr
    assert f"left out: {runs['no-notebook']}: not graded: no notebook" in done.stdout
    assert cli("report", name, "--results", sample_results(name)[0], "--notebooks", local,
               "--out", tmp_path / "here").returncode == 0

    def read(folder: str, table: str, key: str) -> dict:
        rows = csv.DictReader((tmp_path / folder / table).open(encoding="utf-8"))
        return {re.sub(r" \(\d+\)$", "", row.pop(key)): {k: v for k, v in row.items() if k != "failed_by"}
                for row in rows}
    assert read("gs", "tests.csv", "test") == read("here", "tests.csv", "test")
    late = "no" if "late" in docs["full-marks.ipynb"]["extra_data"] else ""    # on time, where recorded
    assert read("gs", "students.csv", "student") == {
        s: row | {"late": late} for s, row in read("here", "students.csv", "student").items()}

    listed = cli("review", name, "--gradescope-export", export)
    assert listed.returncode == 0, listed.stderr
    flagged = {s.removesuffix(".ipynb") for s, r in graded.items() if Result.from_json(r).waiting}
    assert flagged and flagged == set(re.findall(r"^(\S+) \(\d+\)  ", listed.stdout, re.M))
