"""The hostile corpus (tests/hostile/corpus.py) through the grader's three paths.

Every submission gets a result with every test, no more points than its honest twin, the
reason where one is required, in bounded time; nothing it did is left on the machine
(processes, SysV segments, files, metadata, packets) and no other result changes.

Leftovers are counted among what this test process started, never machine-wide: it is a
child subreaper, so a process of its tree that detaches (double fork, setsid) is handed to
it rather than to init, and stays in the tree it walks. Another grader on the same machine,
its boxes running as uid 65534 too, is not counted.
"""
import ctypes
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from autograder import suites
from autograder.core.sandbox import BACKSTOP
from autograder.course import COURSE_FILE, ROOT
from autograder.lms.canvas.plugins import FINAL
from hostile import corpus
from hostile.corpus import Case

pytestmark = pytest.mark.slow

# the test course's timeout_s: a hidden test of the twin takes well under a second of CPU, and each attack
# that hangs or spins waits out its backstop, so a shorter one halves the slowest cases of every run
TIMEOUT_S = 4
# its submission_budget_s: past the wall-clock backstop of loading a cell, so that a cell that hangs at
# load is named as such however busy the machine is
BUDGET_S = BACKSTOP * TIMEOUT_S + 10
BATCH_BOUND_S = 900    # the whole corpus, 2 workers, on a loaded 2-core machine
ALONE_BOUND_S = BUDGET_S + 90   # one notebook: the budget, plus starting the grader on a loaded machine
NOT_ROOT = 4242        # the uid of a grader that is not root (tests/as_user.py)
TESTS = len(suites.load("residual-connections").tests)


@pytest.fixture(scope="module")
def course_file(tmp_path_factory):
    """course.toml with a short per-test limit and per-submission budget, so that the attacks that
    hang or spin end soon."""
    path = tmp_path_factory.mktemp("course") / "course.toml"
    text = COURSE_FILE.read_text(encoding="utf-8")
    short = {"submission_budget_s": BUDGET_S, "timeout_s": TIMEOUT_S}
    lines = [next((f"{key} = {value}" for key, value in short.items() if line.startswith(f"{key} ")), line)
             for line in text.splitlines()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class Outside:
    """What an attack could touch outside its box, and a snapshot to compare after grading."""

    def __init__(self, owner: int = 0):
        """owner: the uid the victims belong to (a grader that is not root owns the class's files)."""
        self.uids = {65534, owner} - {0}     # whose SysV segments count (a box's IPC namespace frees its own)
        corpus.VICTIMS.mkdir(mode=0o755, exist_ok=True)
        for name, mode in (("gradebook.db", 0o644), ("roster.csv", 0o644), ("world-writable.txt", 0o666)):
            path = corpus.VICTIMS / name
            path.write_text("precious\n")
            path.chmod(mode)
            os.setxattr(path, "user.keep", b"1")
        for path in (corpus.VICTIMS, *corpus.VICTIMS.iterdir()):
            os.chown(path, owner, owner)
        self.heard: list[str] = []
        self._sockets, self._threads = [], []
        try:
            udp = self._listen(socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", corpus.UDP_PORT))
            self._start(self._receive, udp)
            for family, address in ((socket.AF_INET, ("127.0.0.1", corpus.TCP_PORT)),
                                    (socket.AF_UNIX, str(corpus.UNIX_SOCKET)), (socket.AF_UNIX, corpus.ABSTRACT)):
                server = self._listen(family, socket.SOCK_STREAM, address)
                server.listen()
                self._start(self._accept, server)
        except BaseException:      # those bound so far would keep every later test of this process from binding
            self.close()
            raise
        os.chmod(corpus.UNIX_SOCKET, 0o777)
        self.before = self.snapshot()

    def _start(self, target, sock):
        thread = threading.Thread(target=target, args=(sock,), daemon=True)
        thread.start()
        self._threads.append(thread)

    def _receive(self, udp):
        try:
            self.heard.append(f"a datagram: {udp.recv(100)!r}")
        except OSError:
            pass

    def _accept(self, server):
        try:
            server.accept()
            self.heard.append(f"a connection to {server.getsockname()!r}")
        except OSError:          # closed at the end of the test
            pass

    def _listen(self, family, kind, address):
        if family == socket.AF_UNIX and isinstance(address, str) and os.path.exists(address):
            os.unlink(address)
        s = socket.socket(family, kind)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(address)
        self._sockets.append(s)
        return s

    def snapshot(self) -> dict:
        victims = {p.name: (p.stat().st_mode, p.stat().st_uid, p.stat().st_mtime_ns, sorted(os.listxattr(p)))
                   for p in sorted(corpus.VICTIMS.iterdir()) if p.is_file()}
        return {"victims": victims, "victim dir": sorted(p.name for p in corpus.VICTIMS.iterdir()),
                "shm segments": {line for line in Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
                                 if int(line.split()[7]) in self.uids},
                "processes": set(our_processes()),
                "tmp": {p.name for p in Path("/tmp").iterdir() if p.name.startswith("hostile-e")},
                "repository": set(subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=all"],
                                                 cwd=ROOT, capture_output=True, text=True).stdout.splitlines())}

    def left_over(self) -> dict:
        """{what: (before, after)} for what changed, or for sets, what is new (other programs on the
        machine may end their own processes or segments meanwhile)."""
        deadline = time.monotonic() + 10      # an IPC namespace is freed by a kernel worker, soon after
        while True:
            after = self.snapshot()
            changed = {k: (self.before[k], after[k]) for k in after
                       if (after[k] - self.before[k] if isinstance(after[k], set) else after[k] != self.before[k])}
            if not changed or time.monotonic() > deadline:
                return {**changed, **({"heard": self.heard} if self.heard else {})}
            time.sleep(0.5)

    def close(self):
        for s in self._sockets:
            try:
                s.shutdown(socket.SHUT_RDWR)     # wakes the thread waiting on it
            except OSError:
                pass
        # a thread's accept() holds its socket until it returns: an abstract name stays bound till then, and on a
        # loaded machine the next test's Outside could find it taken
        for thread in self._threads:
            thread.join(timeout=30)
        for s in self._sockets:
            s.close()


PR_SET_CHILD_SUBREAPER = 36
assert ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0   # see the module's docstring


def our_processes() -> list[str]:
    """The live processes descended from this one ("PID name"), a detached one included (subreaper)."""
    parents, names = {}, {}
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except OSError:
            continue
        if not fields.get("State", "").strip().startswith("Z"):
            pid = int(status.parent.name)
            parents[pid], names[pid] = int(fields.get("PPid", "0")), fields.get("Name", "").strip()
    ours, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - ours
        ours |= frontier
    return sorted(f"{pid} {names[pid]}" for pid in ours)


@pytest.fixture
def outside():
    watched = Outside()
    yield watched
    watched.close()


def grade(course_file, scratch: Path, *args, timeout=BATCH_BOUND_S) -> tuple[subprocess.CompletedProcess, float]:
    """`python -m autograder grade` with the test course, a secret in its environment, and its
    scratch folders under `scratch` (so that any left behind are seen)."""
    scratch.mkdir()
    env = {**os.environ, "COURSE_FILE": str(course_file), corpus.SECRET_VAR: corpus.SECRET, "TMPDIR": str(scratch)}
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", "residual-connections", *map(str, args)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    return proc, time.monotonic() - start


def check(name: str, case: corpus.Case, result: dict) -> list[str]:
    """What is wrong with one submission's result (empty when it is as required)."""
    problems = []
    outputs = "\n".join(t["output"] for t in result["tests"])
    if len(result["tests"]) != TESTS or result["max_score"] != corpus.TWIN_SCORE:
        problems.append(f"{name}: {len(result['tests'])} tests out of {result['max_score']}")
    if result["score"] > case.max_score:
        problems.append(f"{name}: {result['score']} points, more than {case.max_score}")
    if case.reason and not any(phrase in outputs for phrase in case.reason.split("|")):
        problems.append(f"{name}: no '{case.reason}' in its outputs: {outputs[:300]!r}")
    for leak in ("ESCAPED", corpus.SECRET, "Traceback"):
        if leak in outputs:
            problems.append(f"{name}: {leak} in its outputs: {outputs[outputs.index(leak) - 100:][:300]!r}")
    return problems


def test_hostile_batch(tmp_path, course_file, outside):
    """The attacks on the outside in one batch (`grade ASSIGNMENT FOLDER`, whose fork server is a fresh
    interpreter), two at a time; of the items in ONE_OF, its one attack."""
    cases = some_of(tmp_path / "corpus", OUTSIDE, one_each=True)
    assert {case.item for case in cases.values()} == OUTSIDE
    proc, took = grade(course_file, tmp_path / "scratch", tmp_path / "corpus", "--json", "--workers", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = {Path(r["submission"]).name: r for r in map(json.loads, proc.stdout.splitlines())}
    assert sorted(results) == sorted(cases)
    assert corpus.SECRET not in proc.stdout + proc.stderr
    problems = [p for name, case in cases.items() for p in check(name, case, results[name])]
    assert not problems, "\n".join(problems)
    assert results["honest-twin.ipynb"]["score"] == corpus.TWIN_SCORE
    assert took < BATCH_BOUND_S
    assert outside.left_over() == {}
    assert left_in(tmp_path / "scratch") == []


# attacks on the grader's side of a batch: the inputs' memfd shrunk under its reading (once a SIGBUS that
# ended the batch), a finaliser putting the inputs back after the return, a stall in every function
CLASSMATES_OF = ("hostile-arena-shrink.ipynb", "hostile-finaliser-restores.ipynb", "hostile-budget.ipynb")


def test_a_hostile_submission_costs_its_classmates_nothing(tmp_path, course_file):
    """Two honest classmates (the twin, a partly right sample) graded in one batch beside attacks on the
    grader's side: each attack gets its own result with every test, bounded by its twin, and each
    classmate's result is, test for test, its result graded alone."""
    cases = corpus.write_corpus(tmp_path / "corpus")
    batch = tmp_path / "batch"
    batch.mkdir()
    honest = {"honest-twin.ipynb": tmp_path / "corpus" / "honest-twin.ipynb",
              "partly-right.ipynb": ROOT / "submissions" / "residual-connections" / "partly-right.ipynb"}
    for name in CLASSMATES_OF:
        shutil.copy(tmp_path / "corpus" / name, batch / name)
    for name, path in honest.items():
        shutil.copy(path, batch / name)
    proc, _ = grade(course_file, tmp_path / "scratch", batch, "--json", "--workers", "2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = {Path(r["submission"]).name: r for r in map(json.loads, proc.stdout.splitlines())}
    assert sorted(results) == sorted([*CLASSMATES_OF, *honest])
    problems = [p for name in CLASSMATES_OF for p in check(name, cases[name], results[name])]
    assert not problems, "\n".join(problems)

    def tests(result: dict) -> list:
        return [(t["name"], t["score"], t["output"]) for t in result["tests"]]

    for name, path in honest.items():
        alone, _ = grade(course_file, tmp_path / f"scratch-{name}", batch / name, "--json", timeout=ALONE_BOUND_S + 60)
        assert alone.returncode == 0, alone.stderr[-3000:]
        assert tests(results[name]) == tests(json.loads(alone.stdout)), name


def some_of(folder: Path, items: set[str], leave_out: frozenset[str] = frozenset(),
            one_each: bool = False) -> dict[str, corpus.Case]:
    """The corpus written to `folder`, only the cases of these items, not named in leave_out and, with
    one_each, of an item in ONE_OF only its one attack (the others' files removed)."""
    cases = corpus.write_corpus(folder)
    for name in [name for name, case in cases.items() if case.item not in items or name in leave_out
                 or (one_each and ONE_OF.get(case.item, name) != name)]:
        (folder / name).unlink()
        del cases[name]
    return cases


# A path other than the class command's (which takes the whole corpus) changes where the fork server
# comes from (a fresh interpreter, or the grading process forked) or who grades, so it runs the attacks on
# what lies outside the box; a notebook refused when read (input), a reply the grader parses (grader
# side, feedback) or a budget spent inside the box (time) meets the same code on every path as root.
OUTSIDE = {"twin", "processes", "memory", "disk", "files", "network", "metadata", "capabilities", "environment",
           "class data"}
# Of these, the defence is made for each child, whatever process forked it (a memory cgroup, a network
# namespace, a PID namespace and its pids cgroup, no capabilities): the batch and the one-notebook paths
# run one attack on each (the class command runs them all, the grader that is not root all it can); of
# the processes, the one aimed at its parent.
ONE_OF = {"memory": "hostile-alloc-8g.ipynb", "network": "hostile-tcp.ipynb",
          "processes": "hostile-kill-grader.ipynb", "capabilities": "hostile-mknod.ipynb"}


def test_every_case_alone(tmp_path, course_file, outside):
    """Each notebook of an attack on the outside by itself (`grade ASSIGNMENT FILE`, whose fork server is
    that very process forked), two commands at a time; of the items in ONE_OF, its one attack."""
    cases = some_of(tmp_path / "corpus", OUTSIDE, one_each=True)
    assert {case.item for case in cases.values()} == OUTSIDE

    def alone(file: str) -> list[str]:
        scratch = tmp_path / f"scratch-{file}"
        proc, took = grade(course_file, scratch, tmp_path / "corpus" / file, "--json", timeout=ALONE_BOUND_S + 60)
        if proc.returncode != 0:
            return [f"{file}: exit status {proc.returncode}: {proc.stderr[-1000:]}"]
        problems = check(file, cases[file], json.loads(proc.stdout))
        if took > ALONE_BOUND_S:
            problems.append(f"{file}: took {took:.0f} s")
        if left_in(scratch):
            problems.append(f"{file}: left {left_in(scratch)} in the grader's temporary folder")
        return problems

    with ThreadPoolExecutor(2) as pool:
        problems = [p for found in pool.map(alone, sorted(cases)) for p in found]
    assert not problems, "\n".join(problems)
    assert outside.left_over() == {}


# without a memory cgroup these attacks meet seccomp instead (memfd_create and shmget refused), so
# they fail without the phrase the cgroup's kill gives
CGROUP_REASONS = {"hostile-memfd-5g.ipynb", "hostile-shm-3x1g.ipynb"}
# and this one would succeed: several processes of one child are bounded only by RLIMIT_AS each,
# the gap docs/security.md states for a grader that is not root
CGROUP_ONLY = frozenset({"hostile-fork-alloc-6g.ipynb"})


@pytest.mark.skipif(os.geteuid() != 0, reason="making an ordinary user's grader needs root (tests/as_user.py)")
def test_hostile_batch_by_a_grader_that_is_not_root(tmp_path, course_file):
    """The attacks on the outside and on time in one batch graded by an ordinary user, who owns the
    victims: the box then comes from user namespaces (docs/security.md), and a deadline from the
    child's own CPU time, as no cgroup counts it. Every outcome is root's, the memory attacks refused
    by seccomp, and nothing of the user's is changed."""
    home = Path(tempfile.mkdtemp(prefix="not-root-"))    # /tmp: tmp_path's parents are root's alone
    outside = Outside(owner=NOT_ROOT)
    try:
        cases = some_of(home / "corpus", OUTSIDE | {"time"}, leave_out=CGROUP_ONLY)
        shutil.copy(course_file, home / "course.toml")
        (home / "scratch").mkdir()
        for path in (home, home / "scratch"):
            os.chown(path, NOT_ROOT, NOT_ROOT)
        env = {**os.environ, "COURSE_FILE": str(home / "course.toml"), corpus.SECRET_VAR: corpus.SECRET,
               "TMPDIR": str(home / "scratch"), "HOME": str(home)}
        start = time.monotonic()
        proc = subprocess.run([sys.executable, str(ROOT / "tests" / "as_user.py"), str(NOT_ROOT), "--",
                               sys.executable, "-m", "autograder", "grade", "residual-connections", str(home / "corpus"),
                               "--json", "--workers", "2"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=BATCH_BOUND_S)
        took = time.monotonic() - start
        assert proc.returncode == 0, proc.stderr[-3000:]
        # said once, on the grader's terminal: the cgroup is all the box lacks
        assert re.search(r"its own PID namespace, no network, .*, the grader's uid 4242 without capabilities, in a "
                         r"user namespace; degraded: no memory cgroup \([^;]*\)\. Grade as root", proc.stderr), proc.stderr
        results = {Path(r["submission"]).name: r for r in map(json.loads, proc.stdout.splitlines())}
        assert sorted(results) == sorted(cases)
        problems = [p for name, case in cases.items()
                    for p in check(name, Case(case.item, case.max_score, "") if name in CGROUP_REASONS else case,
                                   results[name])]
        assert not problems, "\n".join(problems)
        assert results["honest-twin.ipynb"]["score"] == corpus.TWIN_SCORE
        assert took < BATCH_BOUND_S
        assert outside.left_over() == {}
        assert left_in(home / "scratch") == []
    finally:
        outside.close()
        shutil.rmtree(home)
        for path in (corpus.VICTIMS, *corpus.VICTIMS.iterdir()):
            os.chown(path, 0, 0)


def left_in(scratch) -> list:
    """What is left in the grader's temporary folder, less torch's compiler cache, which the fork
    server's warm-up (an optimizer step, suites/residual_connections/specs.py) makes for itself."""
    return [p for p in scratch.iterdir() if not p.name.startswith("torchinductor_")]


# ------------------------------------------------------------------ the class command

EXPECTED = json.loads((corpus.HONEST.parent / "expected.json").read_text())["samples"]
CLASS = {"honest-twin": corpus.TWIN_SCORE, "partly-right": EXPECTED["partly-right.ipynb"]["score"],
         "hostile-budget": None, "segfault-at-import": EXPECTED["segfault-at-import.ipynb"]["score"],
         "hostile-meta-list": None, "hostile-script-in-markdown": corpus.TWIN_SCORE}
HONEST = {"honest-twin", "partly-right", "hostile-script-in-markdown"}
SAMPLES = ("partly-right", "segfault-at-import")      # of CLASS, the two from submissions/, not the corpus


def roster_of(count: int, path: Path) -> Path:
    """A Canvas gradebook export like the sample class's, with `count` students."""
    lines = (ROOT / "submissions" / "roster.csv").read_text(encoding="utf-8-sig").splitlines()
    rows = [f'"Student, Number {n}",{61000 + n},{20279000 + n},s{n},Residual Connections 2027 - Section A,,,,,'
            '0.00,0.00,,,F,F' for n in range(1, count + 1)]
    path.write_text("\n".join(lines[:2] + rows) + "\n", encoding="utf-8")
    return path


def class_area(tmp_path, course_file, budget_s: int, names=tuple(CLASS)):
    """submitted/CANVAS_ID/ for each of `names` (a corpus or sample notebook, in roster order), the
    roster imported; (instructor folder, env, {id: name}). The command's temporary folders go under
    tmp_path/scratch (so that any left behind are seen)."""
    from autograder.lms.canvas.roster import import_roster, read_roster
    from autograder.nbgrading.run import nbgrader_config
    roster_csv = roster_of(len(names), tmp_path / "roster.csv")
    ids = [s.id for s in read_roster(roster_csv).students]
    instructor = tmp_path / "instructor"
    notebooks = tmp_path / "corpus"
    corpus.write_corpus(notebooks)
    students = {}
    for cid, name in zip(ids, names):
        folder = instructor / "submitted" / cid / "residual-connections"
        folder.mkdir(parents=True)
        source = notebooks / f"{name}.ipynb"
        if not source.exists():
            source = ROOT / "submissions" / "residual-connections" / f"{name}.ipynb"
        (folder / "residual-connections.ipynb").write_bytes(source.read_bytes())
        students[cid] = name
    course = tmp_path / "class-course.toml"
    course.write_text("\n".join(f"submission_budget_s = {budget_s}" if l.startswith("submission_budget_s") else l
                                for l in course_file.read_text().splitlines()) + "\n")
    (tmp_path / "scratch").mkdir()
    env = {**os.environ, "COURSE_INSTRUCTOR_DIR": str(instructor), "COURSE_FILE": str(course),
           corpus.SECRET_VAR: corpus.SECRET, "TMPDIR": str(tmp_path / "scratch")}
    before = os.environ.get("COURSE_INSTRUCTOR_DIR")
    os.environ["COURSE_INSTRUCTOR_DIR"] = str(instructor)
    try:
        import_roster(roster_csv, nbgrader_config().CourseDirectory.db_url, ("residual-connections",))
    finally:
        os.environ.pop("COURSE_INSTRUCTOR_DIR") if before is None else os.environ.update(COURSE_INSTRUCTOR_DIR=before)
    return instructor, env, students


def totals(instructor) -> dict[str, float]:
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{instructor / 'gradebook.db'}") as gb:
        return {s.student.id: s.score for s in gb.assignment_submissions("residual-connections")}


def exported(instructor, env) -> dict[str, str]:
    """{Canvas ID: grade} from `nbgrader export` as final (the Canvas CSV; written answers are not graded)."""
    import csv
    proc = subprocess.run([sys.executable, "-m", "nbgrader", "export", FINAL, "--log-level=WARN"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.reader((instructor / "canvas" / "grades.csv").open(encoding="utf-8")))
    return {r[1]: r[5] for r in rows[1:] if r[0] != "Points Possible"}


def autograded_text(instructor, cid) -> str:
    """Every output of a student's autograded notebook (the feedback's per-test lines), as text."""
    found = list((instructor / "autograded" / cid).rglob("*.ipynb"))
    if not found:
        return ""
    nb = json.loads(found[0].read_text(encoding="utf-8"))
    return "\n".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
                     for c in nb["cells"] for o in c.get("outputs", []))


def test_the_whole_corpus_through_the_class_command(tmp_path, course_file, outside):
    """Every notebook of the corpus as one student of a class, beside two honest samples (one partly
    right, one that crashes at import): each ends with a grade (or, unreadable, a line saying why it is
    not in the gradebook), never above its twin, with the reason where one is required; the hanging
    student is stopped by its budget; the honest ones are merged and exported with their scores, and
    their feedback shows a student's script as text."""
    cases = corpus.write_corpus(tmp_path / "corpus")
    names = [file.removesuffix(".ipynb") for file in sorted(cases)] + list(SAMPLES)
    instructor, env, students = class_area(tmp_path, course_file, BUDGET_S, names)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "autograder", "autograde", "residual-connections", "--workers", "2"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=BATCH_BOUND_S + 300)
    took = time.monotonic() - start
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert corpus.SECRET not in proc.stdout + proc.stderr
    got = totals(instructor)
    lines = {line.split()[0]: line for line in proc.stdout.splitlines() if line.startswith("  ")}
    problems = []
    for cid, name in students.items():
        if f"{name}.ipynb" not in cases:      # an honest sample: its expected score, checked below
            continue
        case = cases[f"{name}.ipynb"]
        text = autograded_text(instructor, cid)
        if cid not in got:          # not a notebook nbgrader can read: listed, with why
            text = lines.get(cid, "")
            if "NOT in the gradebook" not in text:
                problems.append(f"{name}: neither graded nor listed: {text!r}")
        elif got[cid] > case.max_score:
            problems.append(f"{name}: {got[cid]} points, more than {case.max_score}")
        flat = " ".join(text.split())          # the feedback wraps its lines
        if case.reason and not any(phrase in flat for phrase in case.reason.split("|")):
            problems.append(f"{name}: no '{case.reason}' in its feedback: {flat[:300]!r}")
        for leak in ("ESCAPED", corpus.SECRET, "Traceback"):
            if leak in text:
                problems.append(f"{name}: {leak} in its feedback")
    assert not problems, "\n".join(problems)
    for cid, name in students.items():
        if CLASS.get(name) is not None:
            assert got[cid] == CLASS[name], (name, got[cid])
    by_name = {name: cid for cid, name in students.items()}
    assert got[by_name["hostile-budget"]] < corpus.TWIN_SCORE
    grades = exported(instructor, env)
    assert {name: float(grades[by_name[name]]) for name in HONEST} == {name: CLASS[name] for name in HONEST}
    assert took < BATCH_BOUND_S
    assert list(instructor.glob("gradebook.*.worker-*")) == []
    pages = {}
    for name in ("hostile-script-in-markdown", "hostile-budget"):
        fb = subprocess.run([sys.executable, "-m", "nbgrader", "generate_feedback", "residual-connections", "--force",
                             f"--student={by_name[name]}", "--log-level=WARN"], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=600)
        assert fb.returncode == 0, fb.stderr
        pages[name] = next((instructor / "feedback" / by_name[name]).rglob("*.html")).read_text(encoding="utf-8")
    page = pages["hostile-script-in-markdown"]
    assert 'alert("hostile")' in page.replace("&quot;", '"')           # shown as text,
    assert '<script>alert' not in page and "<img src=\"x\" onerror" not in page   # never as markup
    assert 'href="javascript' not in page
    assert "time budget" in pages["hostile-budget"]
    assert left_in(tmp_path / "scratch") == []
    assert outside.left_over() == {}


TIME_LIMIT_S = 30


@pytest.mark.parametrize("how", ["SIGTERM", "time limit"])
def test_class_stopped_keeps_the_honest_grades(tmp_path, course_file, outside, how):
    """Stopped while the hanging student is still being graded (its budget is long here): the students
    graded by then are merged and exported, the command says why it stopped, nothing is left running.
    SIGTERM comes when two are graded; the time limit whenever it falls (how many are graded by then
    depends on the machine's load): what it adds is that the run stops then, as after SIGTERM."""
    instructor, env, students = class_area(tmp_path, course_file, 600)
    command = [sys.executable, "-m", "autograder", "autograde", "residual-connections", "--workers", "1"]
    if how == "time limit":
        command += ["--time-limit", str(TIME_LIMIT_S)]
    start = time.monotonic()
    first = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if how == "SIGTERM":
        journals = lambda: " ".join(p.read_text() for p in instructor.glob("gradebook.*.graded"))
        deadline = time.monotonic() + 400
        while len(journals().split()) < 2 and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.2)
        first.send_signal(15)
    out, err = first.communicate(timeout=300)
    took = time.monotonic() - start
    assert first.returncode == 130, err[-3000:]
    assert ("stopped by SIGTERM" if how == "SIGTERM" else "the time limit was reached") in err
    if how == "time limit":      # stopped at the limit, its workers within their stop wait, not by the budget
        assert TIME_LIMIT_S <= took < TIME_LIMIT_S + 60, took
    got = totals(instructor)
    graded = [cid for cid in students if cid in got]
    if how == "SIGTERM":
        assert len(graded) >= 2
    assert all(got[cid] == CLASS[students[cid]] for cid in graded if students[cid] in HONEST)
    grades = exported(instructor, env)
    assert all(float(grades[cid]) == CLASS[students[cid]] for cid in graded if students[cid] in HONEST)
    assert list(instructor.glob("gradebook.*.worker-*")) == []
    assert left_in(tmp_path / "scratch") == []      # each worker closed its grader: none was killed
    assert outside.left_over() == {}
