"""A Canvas-style bulk download made from sample notebooks, for `canvas-zip` and the tests (not real Canvas).

    uploads = pair_uploads(roster, notebooks, late={"51005"}, resubmitted={"51002"}, earlier=release_nb)
    build_bulk_download(Path("submissions.zip"), uploads, "residual-connections.ipynb", deadline)
"""
from __future__ import annotations

import datetime as dt
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ..lms.canvas.collect import canvas_user_name
from ..lms.canvas.roster import Roster, RosterStudent


@dataclass(frozen=True)
class Upload:
    """One student's files in a Canvas-style bulk download (for canvas-zip and the tests)."""
    student: RosterStudent
    notebook: Path
    late: bool = False
    earlier: Path | None = None   # an older upload of the same file name, superseded by `notebook`


ON_TIME = dt.timedelta(hours=-2)    # when an upload is made, from the deadline (the demo's Canvas too)
LATE = dt.timedelta(hours=26)       # a LATE upload: two started days late


def build_bulk_download(out: str | Path, uploads: list[Upload], filename: str, deadline: dt.datetime) -> Path:
    """Write a zip named and laid out as Canvas's "Download Submissions" (attachment ids 700001, ...),
    each entry timed as its upload (UTC): 2 hours before the deadline, or 26 hours after it if LATE."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    next_id = iter(range(700001, 10**9))
    stem, suffix = Path(filename).stem, Path(filename).suffix
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for u in uploads:
            prefix = "_".join([canvas_user_name(u.student.name), *["LATE"] * u.late, u.student.id])
            files = ([(u.earlier, filename), (u.notebook, f"{stem}-1{suffix}")] if u.earlier
                     else [(u.notebook, filename)])
            numbered = [(source, next(next_id), name) for source, name in files]  # older: smaller id
            when = (deadline + (LATE if u.late else ON_TIME)).astimezone(dt.timezone.utc)
            for source, attachment_id, name in reversed(numbered):  # zip order tells nothing about age
                info = zipfile.ZipInfo(f"{prefix}_{attachment_id}_{name}", date_time=when.timetuple()[:6])
                zf.writestr(info, Path(source).read_bytes(), zipfile.ZIP_DEFLATED)
    return out


def pair_uploads(roster: Roster, notebooks: list[Path], late=(), resubmitted=(), earlier: Path | None = None) -> list[Upload]:
    """Give the i-th notebook to the i-th roster student; students after the last notebook submit nothing."""
    return [Upload(student, nb, late=student.id in late,
                   earlier=earlier if student.id in resubmitted else None)
            for student, nb in zip(roster.students, notebooks)]
