"""The contest's pages: the queue, one's own submissions (given one's token) and the
upload form of each task page. Uploads go through the API's checks (harness/server/api.py),
so the page and popcorn-cli refuse the same things. No script: plain forms."""

from __future__ import annotations

from typing import Any

from flask import Flask, render_template, request

from harness.server.api import Api, Rejected, Upload, job_status, queue_rows, runs_of_job
from harness.server.rejudging import report
from harness.storage import rejudgings


def add_contest_pages(app: Flask, api: Api) -> None:
    """Add /queue, /me and /tasks/<task>/upload to `app`, over the API's database and
    checks (`make_api`'s `api`), and the organisers' rejudging page."""
    database = api.db
    add_rejudging_page(app, api)

    def mine(name: str) -> list[dict[str, Any]]:
        with database() as queue:
            jobs = queue.of_user(name, limit=200)
            positions = {j.id: queue.position(j) for j in jobs}
        return [{"id": j.id, "task": j.task, "mode": j.mode, "gpu": j.gpu,
                 "file_name": j.file_name, "created_at": j.created_at, "state": j.status,
                 "status": job_status(j), "position": positions[j.id], "verdict": j.verdict,
                 "error": j.error, "submission_id": j.submission_id, "runs": runs_of_job(j)}
                for j in jobs]

    @app.get("/queue")
    def queue_page() -> str:
        with database() as queue:
            rows = queue_rows(queue)
            kinds = queue.gpu_kinds()
        return render_template("queue.html", rows=rows, kinds=kinds)

    @app.route("/me", methods=["GET", "POST"])
    def me_page() -> Any:
        if request.method == "GET":
            return render_template("me.html", user=None, jobs=[], message=None)
        who = api.user_of(request.form.get("token", ""))
        if who is None:
            return render_template("me.html", user=None, jobs=[],
                                   message="unknown token"), 401
        return render_template("me.html", user=who.name, jobs=mine(who.name), message=None)

    @app.post("/tasks/<task>/upload")
    def upload(task: str) -> Any:
        token = request.form.get("token", "")
        who = api.user_of(token)
        if who is None:
            return render_template("me.html", user=None, jobs=[], message="unknown token: "
                                   "nothing was submitted"), 401
        upload = request.files.get("file")
        data = upload.read(app.config["MAX_CONTENT_LENGTH"]) if upload and upload.filename \
            else None
        try:
            reply = api.accept(who, Upload(
                task, request.form.get("gpu", ""), request.form.get("mode", ""),
                upload.filename if upload else None, data))
        except Rejected as exc:
            return render_template("me.html", user=who.name, jobs=mine(who.name),
                                   message=f"not submitted: {exc.detail}"), exc.code
        details = reply["details"]
        where = (f", number {details['position']} in the {details['gpu']} queue"
                 if details["position"] else "")
        return render_template("me.html", user=who.name, jobs=mine(who.name),
                               message=f"submission {details['id']} accepted{where}")


def add_rejudging_page(app: Flask, api: Api) -> None:
    """Add /rejudgings/<id>: a rejudging's page, for an admin's token."""
    database = api.db

    @app.route("/rejudgings/<int:rid>", methods=["GET", "POST"])
    def rejudging_page(rid: int) -> Any:
        """A rejudging, for an organiser who gives an admin's token: what changed per
        submission, each ranking before and after."""
        if request.method == "GET":
            return render_template("rejudging.html", rid=rid, report=None, message=None)
        who = api.user_of(request.form.get("token", ""))
        if who is None or not who.admin:
            return render_template("rejudging.html", rid=rid, report=None,
                                   message="an admin's token is needed"), 403
        with database() as queue:
            found = rejudgings.rejudging(queue.store, rid)
            if found is None:
                return render_template("rejudging.html", rid=rid, report=None,
                                       message=f"no rejudging {rid}"), 404
            shown = report(queue, found)
        return render_template("rejudging.html", rid=rid, report=shown, message=None)
