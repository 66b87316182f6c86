"""The command line's workflows on the real database: submit's --depends-on and dedup scope,
`workflow submit`, `batch submit`, `batch show`, what `get` shows of them, and errors as one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
from test_cli import Cli, cli, failed, ok, ok_json

__all__ = ["cli"]  # the fixture, used by name

Conn = psycopg.Connection[tuple[object, ...]]


def usage_error(result: Any) -> str:
    assert result.exit_code == 2, (result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jobctl: "), result.stderr
    return str(lines[0])


def complete(conn: Conn, queue: str, result: Any = None) -> int:
    row = conn.execute("select job_id, lease_epoch from jobctl.claim_job('cli-test', array[%s])", (queue,))
    job_id, epoch = row.fetchone() or (None, None)
    assert job_id is not None
    conn.execute("select jobctl.complete_job(%s, %s, %s::jsonb)", (job_id, epoch, json.dumps(result)))
    return int(str(job_id))


def test_submit_with_parents_and_get_shows_them(cli: Cli, conn: Conn, name: str) -> None:
    a = int(ok(cli("submit", name, name)).strip())
    b = int(ok(cli("submit", name, name)).strip())
    child = int(
        ok(cli("submit", name, name + "-c", "--depends-on", f"{a}, {b}", "--on-parent-failure", "wait"))
    )
    job = ok_json(cli("get", str(child), "--json"))
    assert job["state"] == "waiting" and sorted(job["depends_on"]) == [a, b]
    assert job["parent_results"] == {str(a): None, str(b): None}
    assert [j["job_id"] for j in ok_json(cli("list", "--tenant", name, "--state", "waiting", "--json"))] == [
        child
    ]
    complete(conn, name, {"rows": 3})
    complete(conn, name, [1])
    text = ok(cli("get", str(child)))
    assert "state:" in text and "pending" in text
    assert f"depends_on:       [{a},{b}]" in text, text
    assert '"rows":3' in text and "workflow_id:" in text and "batch_id:" in text
    assert ok_json(cli("list", "--tenant", name, "--queue", name + "-c", "--json"))[0]["depends_on"]


def test_submit_errors_are_one_line(cli: Cli, name: str) -> None:
    assert "'x' is not an id" in usage_error(cli("submit", name, "q", "--depends-on", "1,x"))
    line = failed(cli("submit", name, "q", "--dedup-key", "k", "--dedup-mode", "bogus"))
    assert (
        "dedup_mode must be keep, replace or preserve_run_at" in line and "[JC001, field: dedup_mode]" in line
    )
    line = failed(cli("submit", name, "q", "--depends-on", "1", "--on-parent-failure", "shrug"))
    assert "field: on_parent_failure" in line
    other = int(ok(cli("submit", name + "b", "q")).strip())
    assert "field: depends_on" in failed(cli("submit", name, "q", "--depends-on", str(other)))
    # --file takes no job options
    assert "--file takes no" in usage_error(cli("submit", "--file", "-", "--depends-on", "1", input=""))


def test_submit_debounce(cli: Cli, name: str) -> None:
    scope = ["--dedup-key", "sync", "--dedup-states", "pending", "--dedup-period", "3600"]
    first = ok_json(cli("submit", name, "q", '{"v": 1}', *scope, "--json"))
    again = ok_json(cli("submit", name, "q", '{"v": 2}', *scope, "--dedup-mode", "replace", "--json"))
    assert again == {"job_id": first["job_id"], "duplicate": True}
    assert ok_json(cli("get", str(first["job_id"]), "--json"))["payload"] == {"v": 2}


def test_workflow_submit(cli: Cli, conn: Conn, name: str, tmp_path: Path) -> None:
    jobs = [
        {"name": "extract", "tenant_id": name, "queue": name, "payload": {}},
        {"name": "report", "tenant_id": name, "queue": name, "payload": {}, "depends_on": ["extract"]},
    ]
    path = tmp_path / "flow.json"
    path.write_text(json.dumps(jobs))
    text = ok(cli("workflow", "submit", str(path)))
    lines = text.splitlines()
    assert lines[0].split() == ["NAME", "ID"]
    ids = {line.split()[0]: int(line.split()[1]) for line in lines[1:3]}
    assert lines[-1] == f"workflow {ids['extract']}: 2 jobs"
    report = ok_json(cli("get", str(ids["report"]), "--json"))
    assert report["state"] == "waiting" and report["workflow_id"] == ids["extract"]
    made = ok_json(
        cli("workflow", "submit", "-", "--on-parent-failure", "wait", "--json", input=path.read_text())
    )
    assert (
        list(made["job_ids"]) == ["extract", "report"] and made["workflow_id"] == made["job_ids"]["extract"]
    )
    # errors: one line, exit 1
    path.write_text(json.dumps([jobs[1], jobs[0]]))
    line = failed(cli("workflow", "submit", str(path)))
    assert (
        line.startswith("jobctl: jobs[0].depends_on names") and "[JC001, field: jobs[0].depends_on]" in line
    )
    path.write_text("{not json")
    assert "the workflow file is not valid JSON" in failed(cli("workflow", "submit", str(path)))
    path.write_text("{}")
    assert "must hold a JSON array" in failed(cli("workflow", "submit", str(path)))
    assert usage_error(cli("workflow", "submit", str(tmp_path / "missing.json")))


def test_batch_submit_and_show(cli: Cli, conn: Conn, name: str, tmp_path: Path) -> None:
    doc = {
        "jobs": [{"tenant_id": name, "queue": name, "payload": {"i": i}} for i in range(3)],
        "on_finish": {"queue": name + "-done", "payload": {}},
    }
    path = tmp_path / "batch.json"
    path.write_text(json.dumps(doc))
    made = ok_json(cli("batch", "submit", str(path), "--json"))
    assert len(made["job_ids"]) == 3 and made["on_finish_id"] and made["on_success_id"] is None
    shown = ok_json(cli("batch", "show", str(made["batch_id"]), "--json"))
    assert shown["size"] == 3 and shown["counts"] == {"pending": 3} and shown["finished_at"] is None
    for _ in range(3):
        complete(conn, name)
    text = ok(cli("batch", "show", str(made["batch_id"])))
    assert (
        '"completed":3' in text and "finished_at:" in text and f"on_finish:   {made['on_finish_id']}" in text
    )
    callback = ok_json(cli("get", str(made["on_finish_id"]), "--json"))
    assert callback["state"] == "pending" and callback["batch_id"] == made["batch_id"]
    text = ok(cli("batch", "submit", "-", input=json.dumps(doc)))
    assert text.startswith("batch_id:") and "job_ids:" in text
    # errors
    assert f"no batch {2**62}" in failed(cli("batch", "show", str(2**62)))
    assert "is not an id" in usage_error(cli("batch", "show", "zero"))
    path.write_text(json.dumps({"jobs": doc["jobs"]}))
    assert "a batch needs a callback" in failed(cli("batch", "submit", str(path)))
    path.write_text(json.dumps({**doc, "extra": 1}))
    assert "unknown key: extra" in failed(cli("batch", "submit", str(path)))
    path.write_text(json.dumps({**doc, "jobs": [*doc["jobs"], {**doc["jobs"][0], "priority": "high"}]}))
    assert "jobs[3].priority must be an integer" in failed(cli("batch", "submit", str(path)))
