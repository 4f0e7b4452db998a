"""A Canvas that runs here: the REST endpoints `canvas pull` and `canvas push` call, for the demo and the tests.

    with LocalCanvas(token="t0ken") as canvas:                 # an HTTP server on 127.0.0.1, on a thread
        user = canvas.add_student("Abara, Chidi", "Section A", sis_user_id="S1", login_id="cabara")
        aid = canvas.add_assignment("Residual Connections", points=100, due_at=deadline)
        canvas.submit(aid, user, "residual-connections.ipynb", data, submitted_at=when)
        canvas.excuse(aid, user); canvas.extend(aid, user, due_at)
        canvas.throttle(2)              # the next 2 API requests: 403 Rate Limit Exceeded
        canvas.drop("PUT", 1)           # the next PUT is carried out, then the connection closed unanswered
        canvas.base_url, canvas.course_id, canvas.submission(aid, user), canvas.requests

Responses have Canvas's documented shapes (canvas.instructure.com/doc/api): integer ids, ISO 8601
times in UTC, lists paginated with a Link header (`per_page`, default 10, at most max_per_page), errors as
{"errors": [{"message": ...}]}, a bad token answered 401 with WWW-Authenticate. Endpoints:

    GET  /api/v1/courses/:course                                      the course
    GET  /api/v1/courses/:course/enrollments?type[]=StudentEnrollment the roster (the test student is a
                                                                      StudentViewEnrollment)
    GET  /api/v1/courses/:course/sections
    GET  /api/v1/courses/:course/assignments/:assignment
    GET  /api/v1/courses/:course/assignments/:assignment/overrides    extensions (student_ids, due_at)
    GET  /api/v1/courses/:course/assignments/:assignment/submissions  ?include[]=submission_comments
    PUT  /api/v1/courses/:course/assignments/:assignment/submissions/:user
                                       submission[posted_grade], comment[text_comment], comment[file_ids][]
    POST /api/v1/courses/:course/assignments/:assignment/submissions/:user/comments/files
                                       step 1 of a file upload: {upload_url, upload_params}
    POST /files_api/upload/:n          step 2: the file, multipart, no token; 201 and the file's JSON
                                       (Canvas's step 3, confirming, is part of this answer)
    GET  /files/:id/download?verifier= an attachment's bytes
"""
from __future__ import annotations

import datetime as dt
import email.parser
import email.policy
import itertools
import json
import re
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

PER_PAGE = 10   # Canvas's default page size


def iso(when: dt.datetime | None) -> str | None:
    return when.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if when else None


class LocalCanvas:
    """One course on a local HTTP server (see the module's docstring). All state is public, for tests."""

    def __init__(self, token: str, course_id: int = 4101, name: str = "Residual Connections"):
        self.token, self.course_id = token, course_id
        self.max_per_page = 100    # Canvas's cap on a request's per_page (canvasapi asks for 100)
        self.course = {"id": course_id, "name": name, "course_code": "RESID", "workflow_state": "available"}
        self.ids = itertools.count(1001)
        self.sections: dict[int, dict] = {}
        self.users: dict[int, dict] = {}
        self.enrollments: list[dict] = []
        self.assignments: dict[int, dict] = {}
        self.overrides: dict[int, list[dict]] = {}
        self.submissions: dict[tuple[int, int], dict] = {}
        self.files: dict[int, tuple[dict, bytes]] = {}
        self.uploads: dict[str, tuple[int, int, int, str]] = {}   # upload token -> (assignment, user, size, name)
        self.requests: list[tuple[str, str]] = []                 # (method, path) of every request answered
        self._throttle = 0
        self._drops: Counter = Counter()
        self._lock = threading.Lock()
        self._server = None

    # --- the course ------------------------------------------------------------------------

    def add_student(self, sortable_name: str, section: str, sis_user_id: str = "", login_id: str = "",
                    test_student: bool = False, user_id: int | None = None) -> int:
        """A user enrolled as a student (Canvas's Student View user with test_student); returns the user's id."""
        section_id = next((s["id"] for s in self.sections.values() if s["name"] == section), None)
        if section_id is None:
            section_id = next(self.ids)
            self.sections[section_id] = {"id": section_id, "name": section, "course_id": self.course_id}
        uid = user_id or next(self.ids)
        last, _, first = sortable_name.partition(", ")
        self.users[uid] = {"id": uid, "name": f"{first} {last}".strip(), "sortable_name": sortable_name,
                           "short_name": f"{first} {last}".strip(), "sis_user_id": sis_user_id or None,
                           "login_id": login_id or None}
        kind = "StudentViewEnrollment" if test_student else "StudentEnrollment"
        self.enrollments.append({"id": next(self.ids), "course_id": self.course_id, "course_section_id": section_id,
                                 "user_id": uid, "type": kind, "role": kind, "enrollment_state": "active",
                                 "sis_user_id": sis_user_id or None, "user": self.users[uid]})
        for aid in self.assignments:
            self._blank_submission(aid, uid)
        return uid

    def add_assignment(self, name: str, points: float, due_at: dt.datetime, assignment_id: int | None = None) -> int:
        aid = assignment_id or next(self.ids)
        self.assignments[aid] = {"id": aid, "name": name, "course_id": self.course_id, "points_possible": points,
                                 "due_at": iso(due_at), "grading_type": "points", "published": True,
                                 "submission_types": ["online_upload"], "allowed_extensions": ["ipynb"]}
        self.overrides[aid] = []
        for uid in self.users:
            self._blank_submission(aid, uid)
        return aid

    def _blank_submission(self, aid: int, uid: int) -> None:
        self.submissions[aid, uid] = {
            "id": next(self.ids), "assignment_id": aid, "user_id": uid, "attempt": None, "submitted_at": None,
            "workflow_state": "unsubmitted", "submission_type": None, "grade": None, "score": None,
            "entered_grade": None, "entered_score": None, "graded_at": None, "grader_id": None, "posted_at": None,
            "late": False, "missing": True, "excused": False, "seconds_late": 0, "late_policy_status": None,
            "attachments": [], "submission_comments": []}

    def submit(self, aid: int, uid: int, filename: str, data: bytes, submitted_at: dt.datetime,
               also: tuple[tuple[str, bytes], ...] = ()) -> dict:
        """A new attempt uploading `filename` (and `also`'s files); late against the student's own due date."""
        sub = self.submissions[aid, uid]
        due = self.due_at(aid, uid)
        seconds_late = max(0, int((submitted_at - due).total_seconds()))
        sub.update(attempt=(sub["attempt"] or 0) + 1, submitted_at=iso(submitted_at), submission_type="online_upload",
                   workflow_state="submitted" if sub["score"] is None else "graded", missing=False,
                   late=seconds_late > 0, seconds_late=seconds_late,
                   attachments=[self._file(name, content, "application/x-ipynb+json" * name.endswith(".ipynb")
                                           or "application/octet-stream")
                                for name, content in ((filename, data), *also)])
        return sub

    def excuse(self, aid: int, uid: int) -> None:
        self.submissions[aid, uid].update(excused=True, missing=False, workflow_state="graded", grade=None, score=None)

    def extend(self, aid: int, uid: int, due_at: dt.datetime) -> None:
        """An assignment override for one student: their own due date (Canvas's extension)."""
        self.overrides[aid].append({"id": next(self.ids), "assignment_id": aid, "title": "1 student",
                                    "student_ids": [uid], "due_at": iso(due_at), "all_day": False})

    def due_at(self, aid: int, uid: int) -> dt.datetime:
        own = [o["due_at"] for o in self.overrides[aid] if uid in o.get("student_ids", [])]
        return dt.datetime.fromisoformat((own or [self.assignments[aid]["due_at"]])[-1].replace("Z", "+00:00"))

    def submission(self, aid: int, uid: int) -> dict:
        return self.submissions[aid, uid]

    def _file(self, name: str, content: bytes, content_type: str) -> dict:
        fid = next(self.ids)
        meta = {"id": fid, "display_name": name, "filename": name, "content-type": content_type, "size": len(content),
                "created_at": iso(dt.datetime.now(dt.timezone.utc)), "locked": False, "hidden": False,
                "url": f"{self.base_url}/files/{fid}/download?download_frd=1&verifier=v{fid}"}
        self.files[fid] = (meta, content)
        return meta

    # --- faults ----------------------------------------------------------------------------

    def throttle(self, count: int) -> None:
        """The next `count` API requests are refused as Canvas throttles: 403, X-Rate-Limit-Remaining: 0."""
        self._throttle = count

    def drop(self, method: str, count: int = 1) -> None:
        """The next `count` requests of `method` are carried out, then the connection closed without a reply."""
        self._drops[method] += count

    # --- the server --------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2] if self._server else ("127.0.0.1", 0)
        return f"http://{host}:{port}"

    def start(self) -> LocalCanvas:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> LocalCanvas:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- answering ---------------------------------------------------------------------------

    def answer(self, method: str, path: str, query: dict, form: list[tuple[str, str]], files: dict,
               auth: str) -> tuple[int, dict, object]:
        """(status, headers, JSON body or bytes) for one request."""
        if (m := re.fullmatch(r"/files/(\d+)/download", path)) and int(m[1]) in self.files:
            meta, content = self.files[int(m[1])]
            if query.get("verifier") != [f"v{meta['id']}"] and auth != f"Bearer {self.token}":
                return 401, {}, {"errors": [{"message": "user authorization required"}]}
            return 200, {"Content-Type": meta["content-type"]}, content
        if m := re.fullmatch(r"/files_api/upload/(\w+)", path):
            return self._upload_file(m[1], files)
        if not path.startswith("/api/v1/"):
            return 404, {}, {"errors": [{"message": "The specified resource does not exist."}]}
        if auth != f"Bearer {self.token}":
            return 401, {"WWW-Authenticate": 'Bearer realm="canvas-lms"'}, \
                {"errors": [{"message": "Invalid access token."}]}
        if self._throttle:
            self._throttle -= 1
            return 403, {"X-Rate-Limit-Remaining": "0.0", "X-Request-Cost": "2.5"}, "403 Forbidden (Rate Limit Exceeded)\n"
        route = path[len("/api/v1"):]
        course = f"/courses/{self.course_id}"
        a = re.fullmatch(rf"{course}/assignments/(\d+)(/.*)?", route)
        if a and int(a[1]) not in self.assignments:
            a = None
        if route == course:
            return 200, {}, self.course
        if route == f"{course}/enrollments":
            kinds = query.get("type[]")
            return self._page(path, query, [e for e in self.enrollments if not kinds or e["type"] in kinds])
        if route == f"{course}/sections":
            return self._page(path, query, list(self.sections.values()))
        if a and a[2] is None:
            return 200, {}, self.assignments[int(a[1])]
        if a and a[2] == "/overrides":
            return self._page(path, query, self.overrides[int(a[1])])
        if a and a[2] == "/submissions" and method == "GET":
            with_comments = "submission_comments" in query.get("include[]", [])
            subs = [s for (aid, uid), s in self.submissions.items() if aid == int(a[1]) and uid in self.users]
            return self._page(path, query, [s if with_comments else {k: v for k, v in s.items()
                                                                     if k != "submission_comments"} for s in subs])
        if a and (s := re.fullmatch(r"/submissions/(\d+)", a[2] or "")) and method == "PUT":
            return self._update(int(a[1]), int(s[1]), form)
        if a and (s := re.fullmatch(r"/submissions/(\d+)/comments/files", a[2] or "")) and method == "POST":
            token = f"u{next(self.ids)}"
            fields = dict(form)
            self.uploads[token] = (int(a[1]), int(s[1]), int(fields.get("size", 0)), fields.get("name", "file"))
            return 200, {}, {"upload_url": f"{self.base_url}/files_api/upload/{token}",
                             "upload_params": {"filename": fields.get("name", "file"), "content_type": ""}}
        return 404, {}, {"errors": [{"message": "The specified resource does not exist."}]}

    def _page(self, path: str, query: dict, items: list) -> tuple[int, dict, list]:
        per_page = min(int(query.get("per_page", [PER_PAGE])[0]), self.max_per_page)
        page = int(query.get("page", ["1"])[0])
        last = max(1, -(-len(items) // per_page))
        kept = {k: v for k, v in query.items() if k not in ("page", "per_page")}

        def link(n, rel):
            return f'<{self.base_url}{path}?{urlencode({**kept, "page": n, "per_page": per_page}, doseq=True)}>; rel="{rel}"'
        links = [link(page, "current"), *([link(page + 1, "next")] if page < last else []),
                 *([link(page - 1, "prev")] if page > 1 else []), link(1, "first"), link(last, "last")]
        return 200, {"Link": ",".join(links)}, items[(page - 1) * per_page: page * per_page]

    def _update(self, aid: int, uid: int, form: list[tuple[str, str]]) -> tuple[int, dict, dict]:
        sub = self.submissions.get((aid, uid))
        if sub is None:
            return 404, {}, {"errors": [{"message": "The specified resource does not exist."}]}
        fields = dict(form)
        if "submission[posted_grade]" in fields:
            grade = fields["submission[posted_grade]"]
            try:
                score = float(grade)
            except ValueError:
                return 400, {}, {"errors": [{"message": f"invalid posted_grade {grade!r}"}]}
            now = iso(dt.datetime.now(dt.timezone.utc))
            sub.update(grade=grade, score=score, entered_grade=grade, entered_score=score, graded_at=now,
                       posted_at=now, grader_id=1, workflow_state="graded")
        file_ids = [int(v) for k, v in form if k == "comment[file_ids][]"]
        if "comment[text_comment]" in fields or file_ids:
            unknown = [f for f in file_ids if f not in self.files]
            if unknown:
                return 400, {}, {"errors": [{"message": f"unknown file ids {unknown}"}]}
            sub["submission_comments"].append({
                "id": next(self.ids), "author_id": 1, "author_name": "Instructor",
                "comment": fields.get("comment[text_comment]", ""), "created_at": iso(dt.datetime.now(dt.timezone.utc)),
                "attachments": [self.files[f][0] for f in file_ids]})
        return 200, {}, sub

    def _upload_file(self, token: str, files: dict) -> tuple[int, dict, object]:
        if token not in self.uploads or "file" not in files:
            return 400, {}, {"errors": [{"message": "invalid upload"}]}
        _, _, _, name = self.uploads.pop(token)
        return 201, {}, self._file(name, files["file"], "application/octet-stream")


def _handler(canvas: LocalCanvas):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):   # quiet: the demo prints what matters
            pass

        def _serve(self) -> None:
            url = urlsplit(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            form, files = [], {}
            kind = self.headers.get("Content-Type", "")
            if kind.startswith("multipart/form-data"):
                message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                    f"Content-Type: {kind}\r\n\r\n".encode() + body)
                for part in message.iter_parts():
                    name = part.get_param("name", header="content-disposition")
                    if part.get_filename() is not None:
                        files[name] = part.get_payload(decode=True)
                    else:
                        form.append((name, part.get_content()))
            elif body:
                form = [(k, v) for k, values in parse_qs(body.decode(), keep_blank_values=True).items() for v in values]
            with canvas._lock:
                status, headers, payload = canvas.answer(self.command, url.path, parse_qs(url.query), form, files,
                                                         self.headers.get("Authorization", ""))
                canvas.requests.append((self.command, url.path))
                dropped = canvas._drops[self.command] > 0 and url.path.startswith("/api/v1/")
                if dropped:
                    canvas._drops[self.command] -= 1
            if dropped:   # done, but the answer is lost: the client sees the connection close
                self.close_connection = True
                self.connection.shutdown(2)
                return
            data = payload if isinstance(payload, bytes) else (
                payload.encode() if isinstance(payload, str) else json.dumps(payload).encode())
            self.send_response(status)
            json_body = not isinstance(payload, (bytes, str))
            self.send_header("Content-Type", "application/json; charset=utf-8" if json_body else
                             headers.pop("Content-Type", "text/plain"))
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = _serve

    return Handler
