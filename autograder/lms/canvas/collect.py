"""Canvas's "Download Submissions" zip: which file is whose, and each student's newest notebook.

    problems = extract_archives(archive_dir, extracted_dir)   # a corrupt entry is reported, the rest kept
    collection = plan_collection(files, roster_names)         # {Canvas ID: sortable name}; .chosen, .problems
    save_collection(db_url, assignment, collection, problems) # canvas/collected-ASSIGNMENT.json
    print(shown(problem, keep=""))   # results/terminal.py: a student's file name cannot drive the terminal
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import nbtest

from ...nbgrading.run import unreadable
from .roster import canvas_dir, write_json

# Canvas's bulk download (canvas-lms lib/content_zipper.rb):
#   "#{sortable name, lowercased, non-word characters removed}_[LATE_]#{user id}_#{attachment id}_#{file name}"
# The name never holds "_<digits>_" (Canvas strips that), but it may *end* in "_<digits>"
# ("Smith_51003" -> "smith_51003_51001_700001_x.ipynb"), so the shortest name that fits can
# name a classmate's id: every split is tried (splits()) and only one matching the roster's
# name for its id is taken. The file name gets "-N" when the student uploaded a file of that
# name before (Attachment.make_unique_filename).
FILE_NAME = re.compile(r"(?P<name>.+?)_(?P<late>LATE_)?(?P<canvas_id>\d+)_(?P<attachment_id>\d+)_(?P<original>.+)\Z")
SPLIT = re.compile(r"_(?P<late>LATE_)?(?P<canvas_id>\d+)_(?P<attachment_id>\d+)_")
ANONYMOUS = re.compile(r"(LATE_)?anon_")
RESUBMISSION = re.compile(r"-(\d+)(\.[^.]*)?\Z")


@dataclass(frozen=True)
class CanvasFile:
    path: str            # as found on disk
    name: str            # Canvas's sanitised sortable name
    late: bool
    canvas_id: str
    attachment_id: int   # Canvas's file id: a database sequence, so a later upload has a larger one
    original: str        # the file name the student uploaded (with Canvas's "-N")

    @property
    def resubmission(self) -> int:
        """N of Canvas's "-N" suffix (0 without one)."""
        match = RESUBMISSION.search(self.original)
        return int(match[1]) if match else 0

    @property
    def newness(self) -> tuple[int, int]:
        return self.attachment_id, self.resubmission

    def upload_time(self, deadline: dt.datetime) -> dt.datetime:
        """When it was uploaded, as far as the download tells: the file's time (the zip entry's,
        kept by extract_archives, read as UTC), made to agree with Canvas's LATE mark, which
        decides: a LATE file counts as at least a second after the deadline, another as no later."""
        when = dt.datetime.fromtimestamp(os.path.getmtime(self.path), dt.timezone.utc)
        if self.late:
            return max(when, deadline + dt.timedelta(seconds=1))
        return min(when, deadline)


def parse_filename(path: str | Path) -> CanvasFile | None:
    """The parts of a Canvas bulk-download file name, or None if it is not one."""
    match = FILE_NAME.match(Path(path).name)
    if not match:
        return None
    return CanvasFile(path=str(path), name=match["name"], late=bool(match["late"]),
                      canvas_id=match["canvas_id"], attachment_id=int(match["attachment_id"]),
                      original=match["original"])


def splits(path: str | Path) -> list[CanvasFile]:
    """Every reading of a Canvas bulk-download file name, shortest name first ([] if none)."""
    shown = Path(path).name
    out = []
    for start in range(1, len(shown)):
        match = SPLIT.match(shown, start)
        if match and match.end() < len(shown):
            out.append(CanvasFile(path=str(path), name=shown[:start], late=bool(match["late"]),
                                  canvas_id=match["canvas_id"], attachment_id=int(match["attachment_id"]),
                                  original=shown[match.end():]))
    return out


def attribute(path: str | Path, roster: dict[str, str]) -> tuple[CanvasFile | None, str]:
    """The reading of a file name that is a roster student's ({Canvas ID: sortable name}), or (None, why).

    One reading with a roster ID: that one (the roster's name may be older than the upload).
    Several: only the one whose name is Canvas's for its ID, else none (a name ending in
    "_51003" must not hand the upload to student 51003)."""
    readings = splits(path)
    shortest = {}                    # per ID its shortest reading ("x_LATE_51002_..." is also "x_LATE" + "51002")
    for f in readings:
        shortest.setdefault(f.canvas_id, f)
    listed = [f for f in shortest.values() if f.canvas_id in roster]
    named = [f for f in listed if canvas_user_name(roster[f.canvas_id]) == f.name]
    if len(listed) == 1 or len(named) == 1:
        return (listed if len(listed) == 1 else named)[0], ""
    if listed:
        ids = " or ".join(sorted({f.canvas_id for f in listed}))
        return None, f"the name could be Canvas ID {ids}; not collected (hand it to the right student yourself)"
    first = readings[0]
    return None, (f"Canvas ID {first.canvas_id} ({first.name}) is not in the roster; not collected "
                  "(import a fresh Canvas gradebook export, then collect again)")


def canvas_user_name(sortable_name: str) -> str:
    """The name part Canvas writes into bulk-download file names."""
    name = re.sub(r"_(\d+)_", r"\1", sortable_name)
    return re.sub(r"[^\w]", "", name.lower())


@dataclass
class Collection:
    chosen: dict[str, CanvasFile]   # Canvas ID -> the notebook to grade
    problems: list[str]             # every file not collected, one message each


def plan_collection(paths, roster: dict[str, str]) -> Collection:
    """Pick each roster student's ({Canvas ID: sortable name}) newest readable notebook; say why
    every other file is left out."""
    candidates: dict[str, list[CanvasFile]] = {}
    problems = []
    for path in sorted(map(str, paths)):
        shown = Path(path).name
        found = parse_filename(path)
        if found is None:
            hint = ("anonymous grading is on in Canvas, so the name has no Canvas ID"
                    if ANONYMOUS.match(shown) else
                    "the name is not Canvas's name_[LATE_]canvasid_attachmentid_file")
            problems.append(f"{shown}: {hint}; not collected")
        elif Path(found.original).suffix.lower() != ".ipynb":
            problems.append(f"{shown}: not a notebook (.ipynb); not collected")
        elif (owned := attribute(path, roster))[0] is None:
            problems.append(f"{shown}: {owned[1]}")
        elif reason := unreadable(path):
            problems.append(f"{shown}: {reason}; not collected")
        else:
            candidates.setdefault(owned[0].canvas_id, []).append(owned[0])
    chosen = {}
    for canvas_id, files in candidates.items():
        newest, *older = sorted(files, key=lambda f: f.newness, reverse=True)
        chosen[canvas_id] = newest
        problems += [f"{Path(f.path).name}: superseded by {Path(newest.path).name}, the newer upload "
                     f"of Canvas ID {canvas_id}; not collected" for f in older]
    return Collection(chosen, problems)


def save_collection(db_url, assignment: str, collection: Collection, problems: list[str]) -> Path:
    """canvas/collected-ASSIGNMENT.json: per student the file taken and whether Canvas marked it late."""
    students = {cid: {"file": Path(f.path).name, "attachment_id": f.attachment_id, "late": f.late}
                for cid, f in collection.chosen.items()}
    return write_json(canvas_dir(db_url) / f"collected-{assignment}.json",
                       {"assignment": assignment, "students": students, "problems": problems})


def load_collection(db_url, assignment: str) -> dict:
    """What the last zip_collect of this assignment recorded ({"students": {}, ...} if none)."""
    path = canvas_dir(db_url) / f"collected-{assignment}.json"
    if not path.is_file():
        return {"assignment": assignment, "students": {}, "problems": []}
    return json.loads(path.read_text(encoding="utf-8"))


MAX_ENTRY_FOLDERS = 16     # folders in a zip entry's path; a notebook sits a few deep at most


def extract_archives(archive_dir: Path, extracted_dir: Path) -> list[str]:
    """Unzip each .zip in archive_dir into extracted_dir/ZIPNAME/, copy other files; list what failed.

    Every file, and every entry of a zip, is read through nbtest's open_file and read_bounded: a
    link is not followed, a FIFO or a device is refused, and nothing is read past MAX_NOTEBOOK_BYTES."""
    problems = []
    for path in sorted(p for p in Path(archive_dir).rglob("*") if p.is_symlink() or not p.is_dir()):
        rel = path.relative_to(archive_dir)
        try:
            if path.suffix.lower() == ".zip":
                with nbtest.open_file(path) as f:
                    problems += _extract_zip(f, path.name, Path(extracted_dir) / rel.parent / path.stem)
            else:
                data = nbtest.read_file(path, nbtest.MAX_NOTEBOOK_BYTES)
                (Path(extracted_dir) / rel).parent.mkdir(parents=True, exist_ok=True)
                (Path(extracted_dir) / rel).write_bytes(data)
        except nbtest.NotebookError as e:
            problems.append(f"{rel}: {e}; not collected")
    return problems


def _extract_zip(file, name: str, dest: Path) -> list[str]:
    try:
        archive = zipfile.ZipFile(file)
    except (zipfile.BadZipFile, OSError) as e:
        return [f"{name}: not a readable zip archive ({e}); nothing extracted from it"]
    problems = []
    with archive:
        for entry in archive.infolist():
            if entry.is_dir():
                continue
            # the entry's name is the student's file name (Canvas's display_name): cut where it is shown
            what = f"{name}: entry {entry.filename[:200]}{'...' * (len(entry.filename) > 200)}"
            depth = entry.filename.count("/")
            if depth > MAX_ENTRY_FOLDERS:
                # 1,500 folders deep made mkdir recurse past Python's limit, and collect stopped for everyone
                problems.append(f"{what}: {depth} folders deep (at most {MAX_ENTRY_FOLDERS}); not extracted")
                continue
            try:
                target = dest / entry.filename
                if not target.resolve().is_relative_to(dest.resolve()):
                    problems.append(f"{what}: points outside the archive; not extracted")
                    continue
                with archive.open(entry) as member:     # its declared size is not trusted either
                    data = nbtest.read_bounded(member, nbtest.MAX_NOTEBOOK_BYTES, what)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                stamp = dt.datetime(*entry.date_time, tzinfo=dt.timezone.utc).timestamp()
                os.utime(target, (stamp, stamp))   # the upload time, for lateness (CanvasFile.upload_time)
            except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as e:
                problems.append(f"{what}: corrupt ({e}); not extracted")
            except nbtest.NotebookError as e:
                problems.append(f"{e}; not extracted")
            except (OSError, ValueError) as e:
                # a name over the file system's 255 bytes, a NUL in it, a file where a folder of it must go
                problems.append(f"{what}: cannot be written here ({getattr(e, 'strerror', None) or e}); "
                                "not extracted")
    return problems
