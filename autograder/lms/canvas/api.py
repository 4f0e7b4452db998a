"""Canvas's REST API through canvasapi: the token, the connection, and its failures as one line each.

    with canvas_errors(settings):                       # CanvasApiError: one line, never the token
        course, assignment = connect(course, "residual-connections")

The token comes from the environment variable CANVAS_TOKEN, else from course.toml's [canvas] token_file,
which must be its owner's alone (mode 0600): a file others can read is refused. It goes into the
Authorization header and nowhere else: no message here quotes a request's headers. Canvas's throttling
(403 or 429 with X-Rate-Limit-Remaining) is waited out and the request sent again (ThrottledSession).
"""
from __future__ import annotations

import os
import stat
import time
import warnings
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import requests
from canvasapi import Canvas
from canvasapi.exceptions import CanvasException, InvalidAccessToken, ResourceDoesNotExist, Unauthorized

from ...course import Course

TOKEN_ENV = "CANVAS_TOKEN"
NEW_TOKEN = "Canvas: Account > Settings > + New Access Token"
BACKOFF_S = (1, 2, 4, 8, 16, 32)   # waits before each resend of a throttled request; then it gives up


class CanvasApiError(RuntimeError):
    """Canvas could not be reached or refused: one line saying what and what to do (never the token)."""


def read_token(course: Course) -> str:
    """CANVAS_TOKEN, else the token file (its owner's alone), else a CanvasApiError saying where to put one."""
    if token := os.environ.get(TOKEN_ENV, "").strip():
        return token
    path = Path(course.canvas.token_file).expanduser()
    try:
        info = path.stat()
    except FileNotFoundError:
        raise CanvasApiError(f"no Canvas access token: set {TOKEN_ENV}, or put it in {path} (chmod 600); "
                             f"make one in {NEW_TOKEN}") from None
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO) or info.st_uid != os.getuid():
        raise CanvasApiError(f"{path}: the Canvas token file is readable by others (mode "
                             f"{stat.S_IMODE(info.st_mode):04o}); refused: `chmod 600 {path}`, and make a new "
                             f"token if others may have read it")
    token = path.read_text(encoding="utf-8").strip()
    if not token:
        raise CanvasApiError(f"{path}: empty; put the Canvas access token in it ({NEW_TOKEN})")
    return token


class ThrottledSession(requests.Session):
    """A session that waits out Canvas's throttling: a 403 "Rate Limit Exceeded" or a 429, each carrying
    X-Rate-Limit-Remaining, is sent again after BACKOFF_S (Canvas refused it before doing anything)."""

    backoff_s = BACKOFF_S

    def send(self, request, **kwargs):
        for wait in (*self.backoff_s, None):
            response = super().send(request, **kwargs)
            if not throttled(response) or wait is None:
                return response
            time.sleep(wait)


def throttled(response: requests.Response) -> bool:
    return (response.status_code in (403, 429) and "X-Rate-Limit-Remaining" in response.headers
            and (response.status_code == 429 or "rate limit exceeded" in response.text.lower()))


def connect(course: Course, assignment: str):
    """(canvasapi Course, canvasapi Assignment) for a course assignment, from course.toml's settings."""
    settings, course_id = course.canvas, course.lms.canvas_course_id
    if not settings.base_url:
        raise CanvasApiError("course.toml [canvas] base_url is not set: the address of your Canvas, "
                             "\"https://canvas.example.edu\"")
    if not course_id:
        raise CanvasApiError("course.toml [lms] canvas_course_id is not set: the number after /courses/ "
                             "in the course's Canvas URL")
    assignment_id = settings.assignments.get(course.assignment(assignment).name, 0)
    if not assignment_id:
        raise CanvasApiError(f"course.toml [canvas] assignments: no Canvas id for {assignment}: the number "
                             "after /assignments/ in its Canvas URL")
    token = read_token(course)
    with warnings.catch_warnings():
        if urlsplit(settings.base_url).hostname in ("127.0.0.1", "localhost"):   # the local Canvas (demo, tests)
            warnings.filterwarnings("ignore", "Canvas may respond unexpectedly", UserWarning)
        canvas = Canvas(settings.base_url, token)
    # canvasapi keeps its requests.Session private; throttling is handled below it, once for every call
    canvas._Canvas__requester._session = ThrottledSession()
    with canvas_errors(settings.base_url):
        remote = canvas.get_course(course_id)
        return remote, remote.get_assignment(assignment_id)


@contextmanager
def canvas_errors(base_url: str, doing: str = ""):
    """canvasapi's and the network's failures as a CanvasApiError of one line (never a header: no token)."""
    at = f"Canvas at {base_url}{doing}"
    try:
        yield
    except (InvalidAccessToken, Unauthorized):
        raise CanvasApiError(f"{at} refused the access token (401: invalid, expired or revoked); make a new one "
                             f"in {NEW_TOKEN} and put it in {TOKEN_ENV} or the token file") from None
    except ResourceDoesNotExist:
        raise CanvasApiError(f"{at}: not found (404); check course.toml's [lms] canvas_course_id and "
                             "[canvas] assignments, and that the token's user teaches the course") from None
    except CanvasException as e:
        said = " ".join(str(e).split())[:200]
        raise CanvasApiError(f"{at} answered with an error ({said}); nothing more was sent") from None
    except requests.RequestException as e:
        raise CanvasApiError(f"{at}: network failure ({type(e).__name__}); run the same command again: "
                             "what was done is recognised and not done twice") from None
