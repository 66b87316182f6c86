"""The command line on the real database: outputs in text and --json, and errors as one line."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import socket
import struct
import subprocess
import sys
import termios
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner, Result
from jobctl import migrate as mig
from jobctl.cli import main
from jobctl.cli.schema import plan_issues

JOBCTL = [sys.executable, "-m", "jobctl.cli"]
Cli = Callable[..., Result]


@pytest.fixture
def cli(dsn: str) -> Cli:
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Result:
        return runner.invoke(main, list(args), env={"JOBCTL_DSN": dsn}, input=input, prog_name="jobctl")

    return invoke


def ok(result: Result) -> str:
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


def ok_json(result: Result) -> Any:
    return json.loads(ok(result))


def failed(result: Result) -> str:
    """The one-line error of a command that failed with exit status 1."""
    assert result.exit_code == 1, (result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jobctl: "), result.stderr
    return lines[0]


def write_jsonl(path: Path, jobs: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(j) + "\n" for j in jobs))
    return path


def pending(cli: Cli, tenant: str) -> dict[str, int]:
    """Pending jobs per queue of a tenant, from `jobctl stats --json`."""
    return {r["queue"]: r["pending"] for r in ok_json(cli("stats", "--tenant", tenant, "--json"))}


COMMANDS = [
    "migrate",
    "validate",
    "shards",
    "submit",
    "get",
    "wait",
    "list",
    "history",
    "cancel",
    "retry",
    "workflow",
    "batch",
    "event",
    "tenant",
    "key",
    "queue",
    "schedule",
    "token",
    "access",
]
COMMANDS += ["stats", "doctor", "top", "archive", "serve", "worker"]


def test_help_lists_every_command(cli: Cli) -> None:
    text = ok(cli("--help"))
    listed = [line.split()[0] for line in text.split("Commands:")[1].splitlines() if line.strip()]
    assert listed == COMMANDS
    subcommands = [["tenant", "put"], ["tenant", "list"], ["token", "create"], ["key", "put"]]
    subcommands += [
        ["queue", "put"],
        ["archive", "run"],
        ["archive", "list"],
        ["archive", "verify"],
        ["event", "emit"],
    ]
    for args in [[c] for c in COMMANDS] + subcommands:
        assert "Usage: " in ok(cli(*args, "--help")), args
    for args in (["submit"], ["list"], ["token", "create"], ["key", "put"], ["queue", "put"]):
        assert "Examples:" in ok(cli(*args, "--help")), args


def test_submit_one_and_its_dedup_repeat(cli: Cli, name: str) -> None:
    first = cli("submit", name, "q", '{"n": 1}', "--dedup-key", "k")
    job_id = int(ok(first).strip())
    again = cli("submit", name, "q", '{"n": 2}', "--dedup-key", "k")
    assert int(ok(again).strip()) == job_id
    assert f"duplicate of job {job_id}" in again.stderr
    assert ok_json(cli("submit", name, "q", "--dedup-key", "k", "--json")) == {
        "job_id": job_id,
        "duplicate": True,
    }

    options = ["--priority", "5", "--delay", "60", "--max-attempts", "4", "--timeout", "30"]
    options += ["--backoff", '{"strategy": "fixed", "base": "5 seconds"}']
    made = ok_json(cli("submit", name, "q", "--json", *options))
    assert made["duplicate"] is False
    job = ok_json(cli("get", str(made["job_id"]), "--json"))
    assert (job["priority"], job["max_attempts"], job["timeout"], job["payload"]) == (5, 4, 30.0, {})
    assert job["backoff"]["strategy"] == "fixed"
    assert job["run_at"] > job["created_at"]  # ISO 8601 in the same zone: compares as text


def test_submit_file_in_batches_with_a_summary(cli: Cli, name: str, tmp_path: Path) -> None:
    jobs = [{"tenant_id": name, "queue": "bulk", "payload": {"i": i}} for i in range(2500)]
    jobs[0]["dedup_key"] = "once"
    jobs.append({"tenant_id": name, "queue": "bulk", "payload": {}, "dedup_key": "once"})
    path = write_jsonl(tmp_path / "jobs.jsonl", jobs)

    summary = ok_json(cli("submit", "--file", str(path), "--json"))
    assert (summary["submitted"], summary["duplicates"], summary["batches"]) == (2500, 1, 3)
    assert summary["jobs_per_s"] > 0
    assert pending(cli, name) == {"bulk": 2500}

    line = json.dumps({"tenant_id": name, "queue": "stdin", "payload": {}})
    text = ok(cli("submit", "--file", "-", input=line + "\n"))
    assert text.startswith("submitted 1 jobs (0 duplicates) in 1 batches") and "jobs/s" in text


def test_a_bad_line_writes_nothing_of_its_batch(cli: Cli, name: str, tmp_path: Path) -> None:
    jobs = [{"tenant_id": name, "queue": "sql", "payload": {"i": i}} for i in range(1500)]
    jobs[1233]["priority"] = 999  # line 1234, in the second batch
    error = failed(cli("submit", "--file", str(write_jsonl(tmp_path / "bad.jsonl", jobs))))
    assert error.startswith("jobctl: line 1234: priority must be")
    assert "[JC001, field: priority]" in error and "lines 1-1000 were submitted" in error

    lines = [json.dumps({"tenant_id": name, "queue": "json", "payload": {}})] * 25
    lines[16] = '{"tenant_id": oops'
    error = failed(cli("submit", "--file", "-", "--batch-size", "10", input="\n".join(lines) + "\n"))
    assert error.startswith("jobctl: line 17 is not valid JSON")
    assert "nothing from line 11 on" in error
    assert pending(cli, name) == {"sql": 1000, "json": 10}


def test_get_list_history_cancel_retry(cli: Cli, name: str) -> None:
    ids = [int(ok(cli("submit", name, "q", f'{{"n": {n}}}')).strip()) for n in range(3)]

    shown = ok(cli("get", str(ids[0])))
    assert f"job_id:           {ids[0]}" in shown and "state:            pending" in shown
    assert 'payload:          {"n":0}' in shown
    assert ok_json(cli("get", str(ids[0]), "--json"))["payload"] == {"n": 0}

    table = ok(cli("list", "--tenant", name)).splitlines()
    assert table[0].split() == [
        "ID",
        "QUEUE",
        "STATE",
        "PRIO",
        "ATTEMPT",
        "RUN",
        "AT",
        "CREATED",
        "LAST",
        "ERROR",
    ]
    assert [int(line.split()[0]) for line in table[1:]] == ids[::-1]
    page = ok(cli("list", "--tenant", name, "--limit", "2")).splitlines()
    assert page[-1] == f"(more may follow: jobctl list --tenant {name} --before {ids[1]} --limit 2)"
    rest = ok_json(cli("list", "--tenant", name, "--before", str(ids[1]), "--limit", "2", "--json"))
    assert [j["job_id"] for j in rest] == [ids[0]]

    assert ok(cli("cancel", str(ids[1]))) == f"job {ids[1]}: cancelled\n"
    assert "[JC010" in failed(cli("cancel", str(ids[1])))
    assert ok_json(cli("retry", str(ids[1]), "--json")) == {"job_id": ids[1], "state": "pending"}
    assert "[JC010" in failed(cli("retry", str(ids[1])))
    assert [
        j["job_id"] for j in ok_json(cli("list", "--tenant", name, "--state", "pending", "--json"))
    ] == ids[::-1]

    history = ok(cli("history", str(ids[1]))).splitlines()
    assert [line.split()[2] for line in history[1:]] == ["submitted", "cancelled", "retried"]
    events = ok_json(cli("history", str(ids[1]), "--json"))
    assert [e["event"] for e in events] == ["submitted", "cancelled", "retried"]
    assert events[0]["at"].startswith("20") and "T" in events[0]["at"]

    unknown = str(ids[-1] + 10**9)
    assert failed(cli("get", unknown)) == f"jobctl: no job {unknown}"
    assert failed(cli("history", unknown)) == f"jobctl: no job {unknown}"
    assert "[P0002" in failed(cli("cancel", unknown))


def test_tenant_put_and_list(cli: Cli, name: str) -> None:
    shown = ok(cli("tenant", "put", name, "--weight", "3", "--max-pending", "100", "--claim-rate", "2.5"))
    assert "weight:           3" in shown and "max_running:      unlimited" in shown
    row = next(t for t in ok_json(cli("tenant", "list", "--json")) if t["tenant_id"] == name)
    assert (row["weight"], row["max_pending"], row["claim_rate"], row["max_running"]) == (3, 100, 2.5, None)
    table = ok(cli("tenant", "list")).splitlines()
    headers = re.split(r"\s{2,}", table[0].strip())
    assert headers[4:8] == ["SUBMIT/S", "SUBMIT BURST", "CLAIM/S", "CLAIM BURST"]
    assert len(set(headers)) == len(headers), "every header names one column"
    listed = next(line for line in table if line.startswith(name + " "))
    assert listed.split()[1:4] == ["3", "100", "-"]

    reset = ok_json(cli("tenant", "put", name, "--json"))  # every field is set: omitted ones to defaults
    assert (reset["weight"], reset["max_pending"], reset["claim_rate"]) == (1, None, None)
    # the database's HINT is shown, on the same line: here the ranges
    assert "[JC001, field: weight] hint: " in (error := failed(cli("tenant", "put", name, "--weight", "0")))
    assert "weight: 1..10000" in error

    assert ok(cli("tenant", "pause", name)).strip() == f"tenant {name} paused"
    assert ok(cli("tenant", "pause", name)).strip() == f"tenant {name} was already paused"
    assert (
        next(t for t in ok_json(cli("tenant", "list", "--json")) if t["tenant_id"] == name)["paused"] is True
    )
    assert ok_json(cli("tenant", "resume", name, "--json")) == {
        "tenant_id": name,
        "paused": False,
        "changed": True,
    }
    assert "[P0002, field: tenant_id]" in failed(cli("tenant", "pause", name + "x"))


def test_schedule_put_list_next_drop(cli: Cli, name: str) -> None:
    saved = ok_json(cli("schedule", "put", name, "nightly", "0 2 * * *", "reports", '{"k": 1}', "--json"))
    assert (saved["cron"], saved["queue"], saved["payload"], saved["catch_up"]) == (
        "0 2 * * *",
        "reports",
        {"k": 1},
        1,
    )
    assert saved["next_fire_at"].endswith("T02:00:00+00:00")
    listed = ok_json(cli("schedule", "list", name, "--json"))
    assert [s["name"] for s in listed] == ["nightly"]
    assert any(line.startswith(f"{name} ") for line in ok(cli("schedule", "list")).splitlines())
    times = ok(cli("schedule", "next", "*/15 * * * *", "--count", "3")).splitlines()
    # the one text format of times, as every command shows them (--json: ISO 8601)
    assert len(times) == 3 and all(
        re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:(00|15|30|45):00Z", t) for t in times
    ), times
    assert all(t.endswith("+00:00") for t in ok_json(cli("schedule", "next", "@hourly", "--json")))
    assert "[JC001, field: cron]" in failed(cli("schedule", "put", name, "bad", "0 25 * * *", "q"))
    assert "cron hour field '25' is invalid" in failed(cli("schedule", "next", "0 25 * * *"))
    assert "paused schedule nightly" in ok(cli("schedule", "pause", name, "nightly"))
    assert "was paused already" in ok(cli("schedule", "pause", name, "nightly"))
    assert ok_json(cli("schedule", "list", name, "--json"))[0]["paused"] is True
    job_id = int(ok(cli("schedule", "run", name, "nightly")).split()[1])
    assert ok_json(cli("get", str(job_id), "--json"))["queue"] == "reports"
    assert "resumed schedule nightly" in ok(cli("schedule", "resume", name, "nightly"))
    assert f"no schedule none of tenant {name} [P0002, field: name]" in failed(
        cli("schedule", "pause", name, "none")
    )
    assert "dropped" in ok(cli("schedule", "drop", name, "nightly"))
    assert "no schedule nightly" in failed(cli("schedule", "drop", name, "nightly"))


def test_schedule_in_a_time_zone_and_its_runs(cli: Cli, name: str) -> None:
    put = ["schedule", "put", name, "nine", "0 9 * * *", "reports", "{}"]
    saved = ok_json(cli(*put, "--time-zone", "Asia/Kolkata", "--json"))
    assert saved["time_zone"] == "Asia/Kolkata" and saved["next_fire_at"].endswith("T03:30:00+00:00")
    listed = ok(cli("schedule", "list", name))
    assert " TZ " in listed.splitlines()[0] and "Asia/Kolkata" in listed
    bad = cli(*put, "--time-zone", "Mars/Olympus")
    assert bad.exit_code == 1
    assert bad.stderr.count("\n") == 1 and "[JC001, field: time_zone]" in bad.stderr
    times = ok(cli("schedule", "next", "0 9 * * *", "--time-zone", "Asia/Kolkata", "--count", "2"))
    assert all(t.endswith(" 03:30:00Z") for t in times.splitlines()), times
    assert ok(cli("schedule", "runs", name, "nine")).strip() == "(no runs)"
    job_ids = [int(ok(cli("schedule", "run", name, "nine")).split()[1]) for _ in range(3)]
    runs = ok_json(cli("schedule", "runs", name, "nine", "--json"))
    assert [r["job_id"] for r in runs] == job_ids[::-1] and all(r["fire_time"] for r in runs)
    page = ok(cli("schedule", "runs", name, "nine", "--limit", "2"))
    assert str(job_ids[2]) in page and f"--before {job_ids[1]} --limit 2" in page
    assert ok_json(cli("get", str(job_ids[0]), "--json"))["schedule_name"] == "nine"
    assert cli("schedule", "runs", name, "nine", "--limit", "0").exit_code == 2


def test_token_create_list_revoke(cli: Cli, name: str) -> None:
    made = cli("token", "create", "--tenant", name, "--label", "ci")
    token = ok(made).strip()
    assert token.startswith("jct_") and "\n" not in token
    assert "cannot be shown again" in made.stderr
    token_id = int(token.split("_")[1])
    narrow = ok_json(cli("token", "create", "--tenant", name, "--scope", "jobs:read", "--json"))
    assert narrow["scopes"] == ["jobs:read"] and narrow["token"].startswith(f"jct_{narrow['token_id']}_")

    listed = ok(cli("token", "list", "--tenant", name))
    assert "jobs:cancel,jobs:delete,jobs:read,jobs:retry,jobs:submit" in listed and " ci " in listed

    assert "invalid or revoked" in failed(cli("token", "revoke", token[:-4] + "0000"))  # a wrong secret
    assert ok(cli("token", "revoke", token)) == f"token {token_id}: revoked\n"
    assert ok_json(cli("token", "revoke", str(narrow["token_id"]), "--json"))["revoked"] is True
    tokens = ok_json(cli("token", "list", "--tenant", name, "--json"))
    assert [t["revoked_at"] is not None for t in tokens] == [True, True]
    assert failed(cli("token", "revoke", str(token_id))) == f"jobctl: no active token {token_id}"
    assert cli("token", "create").exit_code == 2  # neither --tenant nor --admin
    assert "unknown scope" in failed(cli("token", "create", "--admin", "--scope", "jobs:fly"))


def test_tenant_with_encrypted_payloads(cli: Cli, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert "no key for tenant" in failed(cli("tenant", "put", name, "--encrypt-payloads"))
    monkeypatch.setenv("JOBCTL_PAYLOAD_KEYS", json.dumps({name: "k-" + name}))
    assert ok_json(cli("tenant", "put", name, "--encrypt-payloads", "--json"))["encrypt_payloads"] is True
    job = ok_json(cli("submit", name, "q", '{"card": "4111"}', "--json"))["job_id"]
    assert ok_json(cli("get", str(job), "--json"))["payload"] == {"card": "4111"}
    monkeypatch.delenv("JOBCTL_PAYLOAD_KEYS")
    assert list(ok_json(cli("get", str(job), "--json"))["payload"]) == ["$jobctl_sealed"]
    assert [
        t["encrypt_payloads"] for t in ok_json(cli("tenant", "list", "--json")) if t["tenant_id"] == name
    ] == [True]


def test_access_grant_list_revoke(cli: Cli, conn: psycopg.Connection[tuple[object, ...]], name: str) -> None:
    conn.execute(f'create role "{name}" in role jobctl_writer')
    try:
        assert ok(cli("access", "grant", name, "--tenant", f"{name}a")) == f"{name}: tenant {name}a\n"
        assert "(already granted)" in ok(cli("access", "grant", name, "--tenant", f"{name}a"))
        assert ok_json(cli("access", "grant", name, "--all", "--json"))["granted"] is True
        mine = [g for g in ok_json(cli("access", "list", "--json")) if g["role_name"] == name]
        assert [g["tenant_id"] for g in mine] == [None, f"{name}a"]
        assert "(every tenant)" in ok(cli("access", "list"))
        assert ok(cli("access", "revoke", name, "--all")) == f"{name}: revoked\n"
        assert (
            failed(cli("access", "revoke", name, "--all")) == f"jobctl: {name} has no grant for every tenant"
        )
        assert "no role" in failed(cli("access", "grant", f"{name}_nobody", "--tenant", "x"))
        assert cli("access", "grant", name).exit_code == 2  # neither --tenant nor --all
    finally:
        conn.execute("delete from jobctl._role_tenant where role_oid = %s::regrole", (name,))
        conn.execute(f'drop role "{name}"')


def test_stats_joins_counts_and_claims(
    cli: Cli, name: str, conn: psycopg.Connection[tuple[object, ...]]
) -> None:
    q1, q2 = f"{name}-a", f"{name}-b"
    for queue, n in ((q1, 3), (q2, 1)):
        for _ in range(n):
            ok(cli("submit", name, queue))
    claimed = conn.execute("select job_id from jobctl.claim_job('cli-test', array[%s])", (q1,)).fetchall()
    assert len(claimed) == 1

    rows = {r["queue"]: r for r in ok_json(cli("stats", "--tenant", name, "--json"))}
    assert (rows[q1]["pending"], rows[q1]["running"], rows[q1]["claims"]) == (2, 1, 1)
    assert rows[q1]["wait_p50_s"] is not None and rows[q1]["claims_per_s"] > 0
    assert rows[q1]["oldest_due_s"] >= 0
    assert (rows[q2]["pending"], rows[q2]["claims"], rows[q2]["wait_p50_s"]) == (1, 0, None)

    table = ok(cli("stats", "--tenant", name, "--queue", q1)).splitlines()
    assert table[0].split()[:9] == [
        "TENANT",
        "QUEUE",
        "PENDING",
        "WAITING",
        "RUNNING",
        "COMPLETED",
        "FAILED",
        "DEAD",
        "CANCELLED",
    ]
    assert table[1].split()[:7] == [name, q1, "2", "0", "1", "0", "0"] and len(table) == 2
    assert ok(cli("stats", "--tenant", name + "-none")) == "(no jobs)\n"


def test_stats_counts_waiting_jobs(cli: Cli, name: str, conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """A job waiting for its parents has a column of its own (it was in none)."""
    row = conn.execute(
        "select job_id from jobctl.submit_job(%s, 'flow', '{}', run_at => now() + interval '1 hour')", (name,)
    ).fetchone()
    assert row is not None
    for _ in range(3):
        conn.execute(
            "select jobctl.submit_job(%s, 'flow', '{}', depends_on => array[%s]::bigint[])", (name, row[0])
        )
    (r,) = ok_json(cli("stats", "--tenant", name, "--json"))
    assert (r["pending"], r["waiting"]) == (1, 3)
    table = ok(cli("stats", "--tenant", name)).splitlines()
    header = table[0].split()
    assert table[1].split()[header.index("WAITING")] == "3"


def test_doctor_verdicts(cli: Cli, conn: psycopg.Connection[tuple[object, ...]]) -> None:
    # Faults of the shared dev cluster doctor must report as `fail`: the files ahead of the database
    # (others edit sql/ while tests run) or a pg_cron launcher that is not running. Without them
    # every check is ok or warn (the tick's may be warn) and doctor exits 0.
    faults = {"schema current"} if plan_issues(mig.plan(conn)) else set()
    launcher = "select exists (select from pg_stat_activity where backend_type = 'pg_cron launcher')"
    if conn.execute(launcher).fetchone() == (False,):
        faults.add("pg_cron launcher")  # then the reaper's lag may fail too: leases go unreaped

    result = cli("doctor")
    assert result.exit_code == (1 if faults else 0), result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["CHECK", "VERDICT", "OBSERVED"]
    assert lines[-1].startswith("doctor: ") and " ok, " in lines[-1]

    report = json.loads(cli("doctor", "--json").stdout)
    checks = {c["check_name"]: c for c in report["checks"]}
    expected = {"schema current", "pg_cron launcher", "reaper lag", "transaction ID age", "oldest snapshot"}
    assert expected | {"partitions ahead jobctl.job", "dead tuples _ready"} <= set(checks)
    failing = {n for n, c in checks.items() if c["verdict"] == "fail"}
    if faults:
        assert faults <= failing <= faults | {"reaper lag"} and report["verdict"] == "fail"
    else:
        assert failing == set() and report["verdict"] in ("ok", "warn")
    assert report["counts"]["fail"] == len(failing)
    for name, check in checks.items():  # every check is a row of the text table, with its verdict
        assert any(line.startswith(name + " ") and check["verdict"] in line.split() for line in lines[1:])
        assert check["verdict"] in ("ok", "warn", "fail")

    current = cli("validate", "--json")
    assert json.loads(current.stdout)["current"] == ("schema current" not in faults)


def test_top_draws_the_dashboard(cli: Cli, name: str) -> None:
    ok(cli("submit", name, "q"))
    out = ok(cli("top", "--tenant", name, "--iterations", "2", "--interval", "0.1"))
    assert "\x1b[" not in out, "no clear-screen when stdout is not a terminal"
    frames = out.split("jobctl top  ")[1:]
    assert len(frames) == 2
    for frame in frames:
        lines = frame.splitlines()
        assert "(Ctrl-C quits)" in lines[0]
        assert (
            lines[1].startswith("health: ")
            and " ok" in lines[1]
            and " warn" in lines[1]
            and " fail" in lines[1]
        )
        assert lines[3].split()[:2] == ["TENANT", "QUEUE"] and lines[4].split()[:3] == [name, "q", "1"]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["get", "987654321987"], "jobctl: no job 987654321987"),
        (["submit", "{name}", "q", '{"to": oops}'], "jobctl: PAYLOAD_JSON is not valid JSON"),
        (["submit", "{name}", "q", "--priority", "999"], "[JC001, field: priority]"),
        (
            ["--dsn", "host=127.0.0.1 port={port} dbname=x connect_timeout=3", "stats"],
            "cannot reach the database",
        ),
    ],
    ids=["unknown-job", "bad-payload", "bad-priority", "no-database"],
)
def test_errors_are_one_line_without_traceback(dsn: str, name: str, args: list[str], expect: str) -> None:
    argv = [a.replace("{name}", name).replace("{port}", str(closed_port())) for a in args]
    env = {**os.environ, "JOBCTL_DSN": dsn}
    out = subprocess.run([*JOBCTL, *argv], env=env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 1, out
    assert out.stdout == "" and "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jobctl: ") and expect in lines[0], out.stderr


# --- every error is one line, with the exit status docs/cli.md documents: 2 for a command line that
# does not parse (before any database call), 1 for anything else

BAD_INVOCATIONS = [
    (["get", "abc"], 2, "Invalid value for 'ID'"),
    (["get", "99999999999999999999999"], 2, "'99999999999999999999999' is not an id"),
    (["get", "0"], 2, "is not an id"),
    (["history", "-5"], 2, ""),
    (["cancel", "9223372036854775808"], 2, "is not an id"),
    (["list", "--tenant", "{name}", "--before", "1e3"], 2, "Invalid value for '--before'"),
    (["list"], 2, "Missing option '--tenant'"),
    (["submit", "{name}", "q", "--priority", "1e9"], 2, "'--priority'"),
    (["submit", "{name}", "q", "--run-at", "tomorrow"], 2, "'--run-at'"),
    (["submit", "{name}", "q", "--run-at", "epoch"], 2, "'--run-at'"),
    (["submit", "{name}", "q", "--run-at", "2026-12-02T02:00:00"], 2, "with a zone"),
    (["submit", "{name}", "q", "--run-at", "+5x"], 2, "+30s, +5m, +2h, +1d"),
    (["submit", "{name}", "q", "--run-at", "+5m", "--delay", "3"], 2, "not both"),
    (["submit"], 2, "give TENANT and QUEUE"),
    (["nosuch"], 2, "No such command 'nosuch'"),
    (["--bogus"], 2, "No such option '--bogus'"),
    (["tenant", "put"], 2, "Missing argument 'TENANT'"),
    (["tenant", "put", "{name}", "--weight", "x"], 2, "'--weight'"),
    (["token", "create"], 2, "exactly one of --tenant TENANT or --admin"),
    (["token", "revoke", "99999999999999999999"], 2, "is not an id"),
    (["submit", "--file", "/nonexistent/jobs.jsonl"], 2, "'--file'"),
    (["key", "put", "{name}"], 2, "give KEY MAX_RUNNING"),
    (["get", "987654321987"], 1, "jobctl: no job 987654321987"),
    (
        ["submit", "{name}", "q", "--priority", "999"],
        1,
        "[JC001, field: priority] hint: Nothing was submitted.",
    ),
    (["submit", "{name}", "q", "{oops"], 1, "PAYLOAD_JSON is not valid JSON"),
    (["tenant", "put", "{name}", "--weight", "0"], 1, "hint: "),
    (["tenant", "pause", "{name}-none"], 1, "[P0002, field: tenant_id]"),
    (["schedule", "next", "0 25 * * *"], 1, "[JC001, field: cron]"),
    (["schedule", "drop", "{name}", "none"], 1, "no schedule none"),
    (["event", "emit", "{name}"], 2, "Missing argument 'EVENT'"),
    (["event", "emit", "{name}", ""], 1, "[JC001, field: event]"),
    (["event", "emit", "{name}", "go", "{oops"], 1, "PAYLOAD_JSON is not valid JSON"),
]


def test_every_error_is_one_line_with_its_documented_exit_status(dsn: str, name: str) -> None:
    env = {**os.environ, "JOBCTL_DSN": dsn}
    for args, status, expect in BAD_INVOCATIONS:
        argv = [a.replace("{name}", name) for a in args]
        out = subprocess.run([*JOBCTL, *argv], env=env, capture_output=True, text=True, timeout=30)
        lines = out.stderr.splitlines()
        assert (out.returncode, out.stdout) == (status, ""), (argv, out)
        assert len(lines) == 1 and lines[0].startswith("jobctl: ") and expect in lines[0], (argv, out.stderr)
        if status == 2:
            assert lines[0].endswith("--help')"), "a usage error points at the command's help"


def test_run_at_takes_iso_8601_with_a_zone_or_a_time_from_now(cli: Cli, name: str) -> None:
    def run_at(*options: str) -> datetime:
        made = ok_json(cli("submit", name, "q", "--json", *options))
        return datetime.fromisoformat(ok_json(cli("get", str(made["job_id"]), "--json"))["run_at"])

    exact = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert run_at("--run-at", "2030-01-02T03:04:05Z") == exact
    assert run_at("--run-at", "2030-01-02 05:04:05+02:00") == exact  # the form the CLI prints, any zone
    now = datetime.now(UTC)
    for text, seconds in [("+30s", 30), ("+5m", 300), ("+2h", 7200), ("+1d", 86400), ("+1.5h", 5400)]:
        due = run_at("--run-at", text) - now
        assert timedelta(seconds=seconds - 60) < due < timedelta(seconds=seconds + 60), (text, due)


def test_ids_are_checked_before_the_database_is_asked(cli: Cli) -> None:
    result = cli("get", "99999999999999999999999")
    assert result.exit_code == 2
    assert result.stderr == (
        "jobctl: Invalid value for 'ID': '99999999999999999999999' is not an id: a whole number from 1 to "
        "9223372036854775807 (see 'jobctl get --help')\n"
    )
    biggest = str(2**63 - 1)  # an id, if no job has it
    assert failed(cli("get", biggest)) == f"jobctl: no job {biggest}"


def run_in_terminal(argv: list[str], env: dict[str, str], columns: int, lines: int) -> str:
    """What a command writes to a terminal of that size (a pseudo-terminal), until it exits."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
    env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(argv, env=env, stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the command exited and closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=30) == 0, b"".join(chunks)
    return b"".join(chunks).decode()


def test_top_fits_an_80_by_24_terminal(dsn: str, cli: Cli, name: str) -> None:
    long_queue = "q" * 60  # a long name is cut, not wrapped
    for i in range(30):  # more rows than 24 lines hold
        ok(cli("submit", f"{name}-{i:02}", long_queue if i == 0 else f"queue-{i}"))
    env = {**os.environ, "JOBCTL_DSN": dsn}
    screen = run_in_terminal([*JOBCTL, "top", "--iterations", "1"], env, 80, 24)
    text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", screen)  # click.clear()'s escapes
    rows = [line for line in text.replace("\r\n", "\n").split("\n") if line]
    assert len(rows) <= 23, rows  # header lines, the table, "... and N more": one line each
    assert all(len(line) <= 80 for line in rows), [len(line) for line in rows]
    table = rows[rows.index(next(r for r in rows if r.startswith("TENANT"))) :]
    assert table[0].split()[:4] == ["TENANT", "QUEUE", "PEND", "RUN"]
    assert table[-1].startswith("... and ") and "more" in table[-1]

    # wide enough: the full headers, every column
    wide = ok(cli("top", "--tenant", f"{name}-01", "--iterations", "1"))  # 80 columns off a terminal
    assert "PENDING" not in wide and "PEND" in wide
    full = CliRunner().invoke(
        main,
        ["top", "--tenant", f"{name}-01", "--iterations", "1"],
        env={"JOBCTL_DSN": dsn, "COLUMNS": "200"},
    )
    assert full.exit_code == 0
    assert "PENDING  WAITING  RUNNING  COMPLETED  FAILED  DEAD  CANCELLED" in full.stdout
