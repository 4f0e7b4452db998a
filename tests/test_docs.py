"""The docs describe the tree as it is: every repository path they name in backticks exists (and every
`module.py: name` they point to is in that module), every markdown file any file names exists, and no
file names a developer's checkout by its absolute path. Reads text only: no torch, no grading.

Each rule is a function tested twice: on the tree, and on planted samples it must catch (and, for the
checkout rule, system paths it must let through)."""
import functools
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["README.md", "CONTRIBUTING.md", "assignments/README.md",
        *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))]
# The files git tracks or would (untracked, not ignored), as they are in the working tree.
TRACKED = [f for f in subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                                     capture_output=True, text=True, check=True).stdout.split("\0")
           if f and (ROOT / f).is_file()]
# Every tracked file and folder, as a path relative to the root ("autograder/core/box.py", "autograder/core").
IN_TREE = {"/".join(parts[:i]) for parts in (f.split("/") for f in TRACKED) for i in range(1, len(parts) + 1)}

PLANTED = "tests/test_docs.py"     # this module: its samples name missing paths and checkouts on purpose


@functools.cache
def texts() -> list[tuple[str, str]]:
    """(path, text) of every text file in TRACKED but this module."""
    data = {name: (ROOT / name).read_bytes() for name in TRACKED if name != PLANTED}
    return [(name, d.decode("utf-8", "replace")) for name, d in data.items() if b"\0" not in d]


# ------------------------------------------------------------------ (a) the paths the docs name

EXTENSIONS = (".py", ".md", ".toml", ".ipynb", ".json", ".jsonl", ".csv", ".sh", ".txt")
# Words that stand for a name the reader fills in (solutions/NAME/NAME.ipynb, dist/report/ASSIGNMENT/).
PLACEHOLDERS = {"NAME", "MODULE", "ASSIGNMENT", "A", "N", "NNN", "STUDENT", "ID", "PID", "OUT",
                "FOLDER", "DIR", "ROOT", "TREE", "USER"}
# Written by the project's commands, never committed: make setup (.venv/), make release, demo, gradescope,
# report and answers (dist/), a semester's nbgrader folders (instructor/).
GENERATED = ("dist/", "instructor/", ".venv/")
# Named in the docs but other programs' files: Gradescope's container (source/, submission/, results.json,
# submission_metadata.json), otter-grader's source, nbgrader's templates and its submitted/ folder, the
# report's files in dist/report/ASSIGNMENT/, and the Gradescope zip's exceptions.json.
ELSEWHERE = ("source/", "submission/", "results.json", "submission_metadata.json", "otter/", "otter_config.json",
             "formgrade/", "feedback/", "submitted/", "timestamp.txt", "tests.csv", "students.csv", "pairs.csv",
             "exceptions.json")
PATHLIKE = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_./-]*")


def named_paths(markdown: str) -> list[str]:
    """The repository paths a markdown text names in inline code: a span, or a word of a command in one,
    that contains a "/" or ends in a file extension, with any ": name" after it dropped (`core/box.py:
    own_user_namespace`). Left out: fenced blocks, absolute and home paths, URLs, bare extensions, and
    names with a placeholder (NAME, ASSIGNMENT, <assignment>, *). In a command only words with both a
    "/" and an extension count: its other words are arguments (`grade A alice.ipynb`)."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    found = []
    for span in re.findall(r"`([^`\n]+)`", text):
        span = span.split(": ")[0].strip()
        words = span.split()
        command = len(words) > 1
        for word in words:
            slash, ext = "/" in word, word.endswith(EXTENSIONS)
            if not (slash and ext if command else slash or ext):
                continue
            if not PATHLIKE.fullmatch(word) or "//" in word or word.startswith("..") or re.fullmatch(r"\.\w+", word):
                continue
            if set(re.split(r"[/._-]", word)) & PLACEHOLDERS:
                continue
            found.append(word)
    return found


def exists(path: str, doc: str) -> bool:
    """path is in the tree: from the root, from the doc's own folder (assignments/README.md names
    `pytest.ini`), or as the tail of a tracked path (docs name autograder's modules by their package,
    `core/box.py`, `templates/setup.sh`); or it is one of GENERATED or ELSEWHERE."""
    if path.startswith(GENERATED + ELSEWHERE) or path in ELSEWHERE:
        return True
    path = path.rstrip("/")
    here = str(Path(doc).parent / path) if "/" in doc else path
    return path in IN_TREE or here in IN_TREE or any(p.endswith("/" + path) for p in IN_TREE)


def named_symbols(markdown: str) -> list[tuple[str, str]]:
    """(module path, name) for each `path.py: name, name` in inline code (`core/sandbox.py: Zygote`,
    `core/extract.py: Template.fill`): the docs' way of pointing into a module."""
    return [(path, name) for path, names in re.findall(r"`([A-Za-z0-9_./-]+\.py): ([A-Za-z_][\w., ]*)`", markdown)
            for name in re.split(r",\s*", names.strip())]


def defines(path: str, doc: str, name: str) -> bool:
    """Every dotted part of name is a word of a tracked file that path names (as exists() finds it)."""
    here = str(Path(doc).parent / path) if "/" in doc else path
    files = [f for f in TRACKED if f in (path, here) or f.endswith("/" + path)]
    return any(all(re.search(rf"\b{re.escape(part)}\b", (ROOT / f).read_text()) for part in name.split("."))
               for f in files)


@pytest.mark.parametrize("doc", DOCS)
def test_every_path_a_doc_names_exists(doc):
    text = (ROOT / doc).read_text()
    missing = [p for p in named_paths(text) if not exists(p, doc)]
    assert not missing, f"{doc} names paths that are not in the repository: {missing}"
    gone = [f"{p}: {n}" for p, n in named_symbols(text) if not defines(p, doc, n)]
    assert not gone, f"{doc} names what these modules do not hold: {gone}"


def test_the_path_check_catches_a_missing_path():
    sample = ("Run `benchmarks/gone.py --fast` and read `autograder/core/gone.py: Thing`, `core/box.py`,\n"
              "`solutions/NAME/NAME.ipynb`, `dist/student/`, `/proc/self/status`, `x + fx`, `.ipynb`,\n"
              "`python -m autograder grade A alice.ipynb`, `docs/gone.md`.\n```\nfenced/gone.py\n```\n")
    paths = named_paths(sample)
    assert paths == ["benchmarks/gone.py", "autograder/core/gone.py", "core/box.py", "dist/student/", "docs/gone.md"]
    assert [p for p in paths if not exists(p, "docs/sample.md")] == [
        "benchmarks/gone.py", "autograder/core/gone.py", "docs/gone.md"]
    assert exists("pytest.ini", "assignments/README.md") and not exists("pytest.inix", "assignments/README.md")
    assert named_symbols("`core/sandbox.py: Zygote, _gone`, `core/extract.py: Template.fill`") == [
        ("core/sandbox.py", "Zygote"), ("core/sandbox.py", "_gone"), ("core/extract.py", "Template.fill")]
    assert defines("core/sandbox.py", "docs/x.md", "Zygote")
    assert defines("core/extract.py", "docs/x.md", "Template.fill")
    assert not defines("core/sandbox.py", "docs/x.md", "_gone") and not defines("core/gone.py", "docs/x.md", "Zygote")


def missing_docs(text: str, where: str) -> list[str]:
    """The markdown files a text names (`docs/security.md`, `README.md`) that are not in the tree,
    read as exists() reads a path."""
    return [name for name in re.findall(r"(?<![\w/.-])([\w./-]*\w\.md)\b", text) if not exists(name, where)]


def test_every_markdown_file_a_tracked_file_names_exists():
    found = [f"{name}: {doc}" for name, text in texts() for doc in missing_docs(text, name)]
    assert not found, "files that name a markdown file not in the repository:\n" + "\n".join(found)


def test_the_markdown_check_catches_a_missing_doc():
    sample = "the object SPEC.md fixes; docs/security.md; docs/gone.md"
    assert missing_docs(sample, "README.md") == ["SPEC.md", "docs/gone.md"]


# ------------------------------------------------------------------ (b) no developer's checkout by path

# Top-level entries only this repository has: under a home or scratch folder, they mark a checkout.
MARKERS = ("autograder", "solutions", "assignments", "submissions", "course.toml", "nbgrader_config.py")
NAME = r"[A-Za-z0-9_.-]+"
CHECKOUT = re.compile(
    rf"{re.escape(str(ROOT))}(?![A-Za-z0-9_.-])"      # this checkout, wherever it is
    rf"|/work/{NAME}"                                  # a working area's checkouts (/work is no system folder)
    rf"|/(?:(?:home|Users)/{NAME}|root|tmp)(?:/{NAME}){{1,2}}/(?:{'|'.join(map(re.escape, MARKERS))})(?![A-Za-z0-9_-])")


def checkout_paths(text: str) -> list[str]:
    """The absolute paths of a developer's checkout in a text (system paths such as /proc, /usr/bin,
    /tmp/hostile-victims, /root/miniforge3 are not)."""
    return [m.group(0) for m in CHECKOUT.finditer(text)]


def test_no_tracked_file_names_a_checkout_by_its_absolute_path():
    found = [f"{name}:{n}: {hit}" for name, text in texts() for n, line in enumerate(text.splitlines(), 1)
             for hit in checkout_paths(line)]
    assert not found, "absolute paths of a developer's checkout (write them relative to the root):\n" + "\n".join(found)


@pytest.mark.parametrize("sample", [
    "--other /work/main", "open('/work/wt-docs/solutions/x.ipynb')", f"see {ROOT}/docs/contract.md",
    "/home/ann/src/residual/autograder/core/box.py", "/Users/ann/residual/course.toml",
    "/root/course/solutions/residual-connections", "/tmp/checkout/assignments/nbtest.py"])
def test_the_checkout_rule_catches(sample):
    assert checkout_paths(sample)


@pytest.mark.parametrize("sample", [
    "/proc/self/status", "/sys/fs/cgroup/memory.max", "/dev/null", "/usr/bin/python3", "/etc/passwd",
    "/tmp/hostile-victims/escape", "/tmp/pytest-of-$USER/pytest-current/", "/root/miniforge3", "/root",
    "/opt/venv/bin/python", "/autograder/source", "~/.config/residual-course/secret", "/work/**/suites/*.py",
    "/usr/local/share/nbgrader/exchange", "/home/student/.cache/pip"])
def test_the_checkout_rule_lets_through(sample):
    assert not checkout_paths(sample)
