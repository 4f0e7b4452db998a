"""The first hour in a real browser: a student's Run All in JupyterLab, an instructor's formgrader.

Headless Debian chromium driven by Playwright (`.ci/run` installs both; Playwright's own
browser download is never used). Each server is a JupyterLab on 127.0.0.1 with a random token;
the test stops it, its kernels and the browser, and checks that nothing of them is left. Screenshots go
to the run's temporary folder (browser0/ under /tmp/pytest-of-$USER/pytest-current/, a worker's folder
under it with pytest-xdist), never into the repository that other tests watch meanwhile.
"""
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from datetime import datetime
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from autograder.course import ROOT
from autograder.demo import loop as demo
from autograder.lms.canvas.roster import read_roster
from helpers import COURSE

pytestmark = pytest.mark.slow

NOTEBOOK = f"{demo.ASSIGNMENT}/{demo.ASSIGNMENT}.ipynb"
INSTALL = "apt-get install -y chromium (the install line in .ci/run)"
PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """JupyterLab serving `root`, with settings of its own: every cell kept in the page (no
    windowing), no news or update pop-ups, and nothing read from the machine's ~/.jupyter,
    ~/.local/share/jupyter or ~/.ipython."""

    def __init__(self, root: Path, scratch: Path, env: dict | None = None):
        self.port, self.token = free_port(), secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        settings = scratch / "lab-settings"
        for name, value in [("notebook-extension/tracker", {"windowingMode": "none"}),
                            ("apputils-extension/notification", {"fetchNews": "false", "checkForUpdates": False})]:
            path = settings / "@jupyterlab" / f"{name}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(value))
        bin_dir = ROOT / ".venv" / "bin"
        self.log = scratch / f"lab-{self.port}.log"
        self.proc = subprocess.Popen(
            [str(bin_dir / "jupyter"), "lab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
             f"--port={self.port}", f"--IdentityProvider.token={self.token}",
             f"--ServerApp.root_dir={root}", "--LabApp.news_url="],
            cwd=root, stdout=self.log.open("w"), stderr=subprocess.STDOUT,
            env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
                 "JUPYTERLAB_SETTINGS_DIR": str(settings),
                 "JUPYTERLAB_WORKSPACES_DIR": str(scratch / "workspaces"),
                 "JUPYTER_RUNTIME_DIR": str(scratch / "runtime"),
                 # none of this machine's own Jupyter or IPython settings, kernels or startup files
                 "JUPYTER_CONFIG_DIR": str(scratch / "config"), "JUPYTER_DATA_DIR": str(scratch / "data"),
                 "IPYTHONDIR": str(scratch / "ipython"), **(env or {})})
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(self.page("/api/status"), timeout=2)
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise AssertionError(f"JupyterLab did not start:\n{self.log.read_text()[-3000:]}")
                time.sleep(0.5)

    def page(self, path: str) -> str:
        return f"{self.url}{path}{'&' if '?' in path else '?'}token={self.token}"

    def kernel_state(self, notebook: str) -> str | None:
        """The execution state of the kernel the server runs for `notebook` (a path under root), or None."""
        with urllib.request.urlopen(self.page("/api/sessions"), timeout=10) as reply:
            sessions = json.load(reply)
        return next((s["kernel"]["execution_state"] for s in sessions
                     if s.get("path") == notebook and s.get("kernel")), None)

    def stop(self) -> None:
        """SIGTERM the server, which shuts its kernels down; SIGKILL, by pid, whatever of the
        server and its descendants (kernels run in sessions of their own) is still there."""
        started = descendants(self.proc.pid) | {self.proc.pid}
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            pass
        left = started & set(parents())
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        self.proc.wait()
        assert not left, f"JupyterLab's processes outlived SIGTERM: {left}\n{self.log.read_text()[-2000:]}"


def parents() -> dict[int, int]:
    """{pid: parent pid} of every live process (zombies left out)."""
    found = {}
    for p in Path("/proc").glob("[0-9]*"):
        try:
            fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            found[int(p.name)] = int(fields[1])
    return found


def descendants(pid: int) -> set[int]:
    tree, found, todo = parents(), set(), [pid]
    while todo:
        pid = todo.pop()
        children = {c for c, parent in tree.items() if parent == pid}
        todo += children - found
        found |= children
    return found


@pytest.fixture(scope="module")
def chromium():
    path = shutil.which("chromium")
    assert path, f"Debian's chromium is not installed: run {INSTALL}"
    return path


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("browser")


@pytest.fixture(scope="module")
def browser(chromium):
    """Chromium through Playwright; at the end, none of the processes they started is left. Only theirs
    count: this worker is a child subreaper (tests/test_hostile.py), so what other tests' processes leave
    behind (a class's grading, a server's kernels) is handed to it too."""
    before = descendants(os.getpid())
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium)
        launched = descendants(os.getpid()) - before        # Playwright's driver and the browser's processes
        yield b
        started = launched.union(*(descendants(pid) for pid in launched))    # and the renderers since
        b.close()
    deadline = time.monotonic() + 10       # the browser's processes end after close returns
    while (left := started & set(parents())) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"the browser left processes behind: {left}"


RUN_STATE = f"""() => {{
    const prompts = [...document.querySelectorAll('{PANEL} .jp-CodeCell .jp-InputPrompt')].map(p => p.textContent.trim());
    const kernel = document.querySelector('{PANEL} .jp-Notebook-ExecutionIndicator');
    return {{prompts, kernel: kernel ? kernel.dataset.status : null,
             dialog: [...document.querySelectorAll('.jp-Dialog')].map(d => d.innerText).join(' | '),
             errors: [...document.querySelectorAll(
                 '{PANEL} [data-mime-type="application/vnd.jupyter.stderr"]')].map(e => e.innerText.slice(-600))}};
}}"""


DIALOG = """() => {
    const dialog = document.querySelector('.jp-Dialog');
    const select = dialog && dialog.querySelector('select');
    return dialog && {text: dialog.innerText, options: select ? [...select.options].map(o => o.textContent) : []};
}"""
KERNEL = "Python 3 (ipykernel)"      # the release's kernelspec


def open_with_kernel(page, lab: "Lab", path: str, timeout_s: float = 120) -> None:
    """Open the notebook at `path` (/lab/.../tree/FILE) and wait until the server runs its kernel, idle.
    On a loaded machine JupyterLab may open the notebook before it has the server's kernelspecs; it
    then asks which kernel to start: a student picks the notebook's own, Python 3, and so does this (once)."""
    page.goto(lab.page(path))
    notebook, accepted, deadline = path.split("/tree/", 1)[1], False, time.monotonic() + timeout_s
    while lab.kernel_state(notebook) != "idle":
        dialog = page.evaluate(DIALOG)
        if dialog and not accepted and "Select Kernel" in dialog["text"] and KERNEL in dialog["options"]:
            page.select_option(".jp-Dialog select", label=KERNEL)
            page.click(".jp-Dialog .jp-mod-accept")
            accepted = True
        elif time.monotonic() > deadline:
            raise AssertionError(f"{notebook}: no idle kernel after {timeout_s:g} s; dialog: {dialog}\n"
                                 f"JupyterLab's log:\n{lab.log.read_text()[-3000:]}")
        time.sleep(0.5)
    page.wait_for_selector(f"{PANEL} .jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000)


def run_all(page, lab: "Lab", path: str, shots: Path, timeout_s: float = 600) -> None:
    """Open the notebook at `path` in JupyterLab, wait for its kernel, Run > Run All Cells, wait until
    every cell ran: the last code cell has a number and no prompt says [*]. A menu click that started
    nothing is made once more. A dialog (the kernel died or restarts), or a run that stopped short (a
    cell raised, so JupyterLab dropped the cells queued after it), fails at once, with what the page
    showed and the server's log."""
    open_with_kernel(page, lab, path)
    clicks, started, still_since, problem = 0, time.monotonic(), None, None
    while problem is None:
        state = page.evaluate(RUN_STATE)
        prompts = state["prompts"]
        running = any("*" in t for t in prompts)
        ran = any(re.search(r"\[\d+\]", t) for t in prompts)
        if prompts and re.search(r"\[\d+\]", prompts[-1]) and not running:
            return
        if state["dialog"]:
            problem = f"a dialog: {state['dialog']}"
        elif running or state["kernel"] != "idle":
            still_since = None
        elif still_since is None or (not ran and clicks < 2 and time.monotonic() - still_since > 30):
            if not ran and clicks < 2:
                page.click(".lm-MenuBar-item:has-text('Run')")
                page.click(".lm-Menu-item[data-command='runmenu:run-all']")
                clicks += 1
            still_since = time.monotonic()
        elif time.monotonic() - still_since > 30:
            problem = ("the run stopped before the last cell (a cell raised?)" if ran else
                       f"Run All started nothing ({clicks} clicks)")
        if time.monotonic() - started > timeout_s:
            problem = f"not finished after {timeout_s:g} s"
        time.sleep(0.5)
    page.screenshot(path=str(shots / "run-all-unfinished.png"))
    raise AssertionError(f"Run All of {path}: {problem}\nkernel: {state['kernel']}\nprompts: {' '.join(prompts)}\n"
                         f"errors: {state['errors']}\nJupyterLab's log:\n{lab.log.read_text()[-3000:]}")


def code_cells(page, nb_path: Path) -> dict[str, object]:
    """{cell id: its locator}: DOM order is the notebook's cell order."""
    ids = [c.get("id") for c in json.loads(nb_path.read_text())["cells"]]
    dom = page.locator(f"{PANEL} .jp-Notebook .jp-Cell")
    assert dom.count() == len(ids)
    return {cid: dom.nth(i) for i, cid in enumerate(ids)}


def test_student_run_all_in_jupyterlab(browser, shots, tmp_path):
    """Run All on the release: each check cell lists its tests, each unfinished demo says so in a
    line, no traceback. Then a solved copy: the survival plot is an image."""
    release = tmp_path / "release"      # Lab autosaves: never let it write into assignments/
    shutil.copytree(ROOT / "assignments", release)
    solved = release / demo.ASSIGNMENT / "solved.ipynb"
    shutil.copy(demo.SAMPLES / "full-marks.ipynb", solved)
    lab = Lab(release, tmp_path)
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        # A workspace per notebook: JupyterLab reopens nothing else, so Run All goes to this one.
        run_all(page, lab, f"/lab/workspaces/release/tree/{NOTEBOOK}", shots)
        cells = code_cells(page, release / NOTEBOOK)
        page.screenshot(path=str(shots / "student-release.png"))
        for part in (1, 2, 3, 4):
            out = cells[f"part{part}-tests"].locator(".jp-OutputArea").inner_text()
            assert re.search(rf"Part {part}: 0 of (\d+) public tests passed \(\1 not done\)\.", out), out
            assert out.count("not done  test_part") >= 1, out
            cells[f"part{part}-tests"].screenshot(path=str(shots / f"student-part{part}-tests.png"))
        for cid in ("part1-demo", "part2-demo", "part3-plot-cell", "part4-demo"):
            out = cells[cid].locator(".jp-OutputArea").inner_text().strip()
            assert out.startswith("Not done yet: ") and "\n" not in out, (cid, out)
            assert cells[cid].locator(".jp-OutputArea img").count() == 0, f"{cid} drew empty axes"
        assert page.locator(f"{PANEL} [data-mime-type='application/vnd.jupyter.stderr']").count() == 0
        assert "Traceback" not in page.locator(f"{PANEL} .jp-Notebook").inner_text()

        run_all(page, lab, f"/lab/workspaces/solved/tree/{demo.ASSIGNMENT}/solved.ipynb", shots)
        cells = code_cells(page, solved)
        plot = cells["part3-plot-cell"]
        plot.scroll_into_view_if_needed()
        plot.screenshot(path=str(shots / "student-solved-plot.png"))
        image = plot.locator(".jp-OutputArea img")
        assert image.count() == 1
        assert image.evaluate("img => img.naturalWidth") > 300
        for part in (1, 2, 3, 4):
            assert "public tests passed." in cells[f"part{part}-tests"].inner_text()
        page.close()
    finally:
        lab.stop()


def test_instructor_formgrader(browser, shots, demo_class, tmp_path):
    """Formgrader on the demo class (conftest.py, shared with test_autograde.py): the due date, the late
    upload's timestamp, a submission's hidden-test results (no line scrolls sideways) and a written
    answer waiting for a grade."""
    lab = Lab(ROOT, tmp_path, env={"COURSE_INSTRUCTOR_DIR": str(demo_class[0])})
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        # As the README says: JupyterLab's menu Nbgrader > Formgrader.
        page.goto(lab.page("/lab/workspaces/formgrader"))
        page.click(".lm-MenuBar-item:has-text('Nbgrader')", timeout=120_000)
        page.click(".lm-Menu-item:has-text('Formgrader')")
        frame = page.wait_for_selector("iframe[src*='formgrader']", timeout=60_000).content_frame()
        row = frame.wait_for_selector(f"tr:has-text('{demo.ASSIGNMENT}')", timeout=60_000)
        due = COURSE.assignment(demo.ASSIGNMENT).deadline_utc
        assert due.strftime("%Y-%m-%d %H:%M") in row.inner_text(), row.inner_text()
        page.screenshot(path=str(shots / "formgrader-assignments.png"))

        page.goto(lab.page(f"/formgrader/manage_submissions/{demo.ASSIGNMENT}"))
        page.wait_for_selector("td.timestamp", timeout=60_000)
        stamps = {r.query_selector("td:nth-child(2)").inner_text().strip(): r.query_selector("td.timestamp").inner_text()
                  for r in page.query_selector_all("table tbody tr") if r.query_selector("td.timestamp")}
        page.screenshot(path=str(shots / "formgrader-submissions.png"), full_page=True)
        late = [datetime.fromisoformat(stamps[s][:19]) > due.replace(tzinfo=None) for s in sorted(demo.LATE)]
        on_time = [datetime.fromisoformat(t[:19]) <= due.replace(tzinfo=None)
                   for s, t in stamps.items() if s not in demo.LATE]
        assert late and all(late) and on_time and all(on_time), stamps

        # Manual grading: the full-marks sample (the roster's first student) answered in writing.
        page.goto(lab.page(f"/formgrader/gradebook/{demo.ASSIGNMENT}/{demo.ASSIGNMENT}"))
        page.wait_for_selector("table tbody tr td a", timeout=60_000)
        page.screenshot(path=str(shots / "formgrader-manual-grading.png"), full_page=True)
        needs = page.locator("table tbody tr:has(td.needs-manual-grade[data-order='1']) a.name-shown")
        names = [needs.nth(i).inner_text() for i in range(needs.count())]
        first = read_roster(demo.ROSTER).students[0].name
        assert first in names, names
        page.locator(f"table tbody tr:has(a.name-shown:text-is('{first}')) a.name-hidden").click()
        page.wait_for_selector("#notebook-container .output_text", timeout=60_000)
        text = page.inner_text("#notebook-container")
        assert "graded by hidden tests run outside your notebook" in text
        assert len(re.findall(r"passed\s+\d+ / \d+", text)) >= 10, text
        # Formgrader's script marks the score boxes still waiting for a grade once it has loaded them.
        page.wait_for_selector("input.score.needs_manual_grade", state="attached", timeout=60_000)
        written = page.locator(".text_cell:has(input.score.needs_manual_grade)")
        assert written.count() == 3
        assert "YOUR ANSWER HERE" not in written.first.inner_text() and "chain rule" in written.first.inner_text()
        wide = page.evaluate("""() => [...document.querySelectorAll('.output_text pre')]
            .filter(p => p.scrollWidth > p.clientWidth + 1).map(p => p.innerText.slice(0, 80))""")
        assert wide == [], wide
        page.screenshot(path=str(shots / "formgrader-submission.png"), full_page=True)
        page.close()
    finally:
        lab.stop()
