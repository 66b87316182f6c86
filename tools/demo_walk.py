"""`make demo`'s walk through the API, printing jobs as they change: run by bin/demo once the
database, a worker (`--handler jobctl.demo:handle`) and the API are up. It talks to the API over HTTP
like any client would, and reads jobs and histories with jobctl.Client."""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from typing import Any

from jobctl import contract, db, queries
from jobctl.client import Client

TENANTS = ("acme", "globex", "initech")
FINAL = {"completed", "dead", "cancelled"}


class Api:
    def __init__(self, base: str, token: str) -> None:
        self.base, self.token = base, token

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")


def say(text: str) -> None:
    print(f"{datetime.now(UTC):%H:%M:%S}  {text}", flush=True)


def submit(api: Api, label: str, body: dict[str, Any]) -> int:
    status, out = api.call("POST", "/api/v1/jobs", body)
    if status not in (200, 201):
        sys.exit(f"demo: submit {label} failed: HTTP {status} {out}")
    job = out["job"]
    dup = " (duplicate: the first job's id, nothing new)" if out.get("duplicate") else ""
    say(f"POST /api/v1/jobs {label:<22} -> {status} job {job['job_id']}{dup}")
    return int(job["job_id"])


def main(base: str) -> None:
    tokens: dict[str, str] = {}
    with db.connect_dicts(autocommit=True) as conn:
        for t in TENANTS:
            row = conn.execute(
                queries.CREATE_API_TOKEN, {"tenant_id": t, "scopes": list(contract.SCOPES), "label": "demo"}
            ).fetchone()
            assert row is not None
            tokens[t] = row["token"]
        # the dashboard's sign-in: a token of every tenant (queues and workers are shared: they need one)
        row = conn.execute(
            queries.CREATE_API_TOKEN,
            {"tenant_id": None, "scopes": list(contract.SCOPES), "label": "demo dashboard"},
        ).fetchone()
        assert row is not None
        dashboard_token = str(row["token"])
        # the scopes as the database stored them, as `jobctl token list` shows them
        listed = conn.execute(queries.LIST_API_TOKENS, {"tenant_id": "acme"}).fetchall()
        scopes = next(t["scopes"] for t in listed if tokens["acme"].startswith(f"jct_{t['token_id']}_"))
    with Client() as client:
        acme, globex, initech = (Api(base, tokens[t]) for t in TENANTS)
        soon = (datetime.now(UTC) + timedelta(seconds=6)).isoformat()
        dedup = f"order-{int(time.time())}"
        jobs = {
            submit(acme, "acme: immediate", {"queue": "demo", "payload": {"sleep": 1}}): "acme immediate",
            submit(
                globex, "globex: delayed 6 s", {"queue": "demo", "payload": {"sleep": 1}, "run_at": soon}
            ): "globex delayed",
            submit(
                initech,
                "initech: fails twice",
                {
                    "queue": "demo",
                    "payload": {"sleep": 0.5, "fail_times": 2},
                    "max_attempts": 5,
                    "backoff": {"strategy": "exponential", "base": "2 seconds", "jitter": False},
                },
            ): "initech retried",
            submit(
                acme, "acme: long, cancelled", {"queue": "demo", "payload": {"sleep": 120}}
            ): "acme cancelled",
            submit(
                globex, "globex: dedup key", {"queue": "demo", "payload": {"sleep": 1}, "dedup_key": dedup}
            ): "globex dedup",
            submit(
                acme,
                "acme: durable",
                {"queue": "demo", "payload": {"sleep": 3, "approval": f"{dedup}/approved"}},
            ): "acme durable",
        }
        submit(
            globex, "globex: same dedup key", {"queue": "demo", "payload": {"sleep": 1}, "dedup_key": dedup}
        )
        long_id = next(i for i, label in jobs.items() if label == "acme cancelled")
        durable_id = next(i for i, label in jobs.items() if label == "acme durable")
        watch(client, jobs, acme, long_id, (durable_id, f"{dedup}/approved"))
        print(f"\nsteps of job {durable_id} (acme durable):")
        for s in client.job_steps(durable_id):
            print(f"  {s.saved_at:%H:%M:%S}  {s.step:<34} attempt {s.attempt}  {json.dumps(s.result)}")
        for job_id, label in jobs.items():
            print(f"\nhistory of job {job_id} ({label}):")
            for h in client.job_history(job_id):
                epoch = h.lease_epoch or "-"
                print(
                    f"  {h.at:%H:%M:%S}  {h.event:<10} attempt {h.attempt}  epoch {epoch:<6}"
                    f" {h.worker_id or ''} {h.detail or ''}".rstrip()
                )
        # jobs that keep coming, so the dashboard has something to show while it is open
        for api, cron, sleep in (
            (acme, "@every 10 seconds", 2),
            (globex, "@every 15 seconds", 4),
            (initech, "* * * * *", 1),
        ):
            status, out = api.call(
                "PUT",
                "/api/v1/schedules/demo-steady",
                {"cron": cron, "queue": "demo", "payload": {"sleep": sleep}},
            )
            if status != 200:
                sys.exit(f"demo: schedule failed: HTTP {status} {out}")
        say("PUT /api/v1/schedules/demo-steady -> a job every 10 s (acme), 15 s (globex), minute (initech)")
    print(f"\nThe API is at {base}. A token for tenant acme (scopes {', '.join(scopes)}):\n")
    print(f"  export TOKEN={tokens['acme']}\n")
    print("Try it:")
    print(
        f'  curl -s -X POST {base}/api/v1/jobs -H "Authorization: Bearer $TOKEN" \\\n'
        '       -H \'Content-Type: application/json\' -d \'{"queue": "demo", "payload": {"sleep": 2}}\''
    )
    print("  .venv/bin/jobctl get <job_id>        # pending -> running -> completed")
    print(f'  curl -s {base}/api/v1/jobs?limit=5 -H "Authorization: Bearer $TOKEN"')
    print(f"  open {base}/api/v1/docs for the OpenAPI page; make demo-stop stops the worker and the API.")
    print(f"\nThe dashboard is at {base}/ (docs/dashboard.md). Sign in with this token of every tenant:\n")
    print(f"  {dashboard_token}\n")
    print("or with the acme token above to see what one tenant sees.")


def watch(
    client: Client,
    jobs: dict[int, str],
    acme: Api,
    long_id: int,
    durable: tuple[int, str],
    limit_s: float = 60,
) -> None:
    """Print each state change until every job is final; cancel the long job once it runs; emit the
    durable job's event once it waits for it (its history's last event: awaiting)."""
    seen: dict[int, str] = {}
    cancelled = emitted = False
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        for job_id, label in jobs.items():
            job = client.get_job(job_id)
            assert job is not None
            parked = ""
            if job_id == durable[0] and job.state == "pending" and job.started_at is not None:
                last = client.job_history(job_id)[-1]
                parked = {
                    "slept": " (asleep: its worker slot is free)",
                    "awaiting": f" (waiting for {last.detail})",
                }.get(last.event, "")
                if last.event == "awaiting" and not emitted:
                    status, out = acme.call(
                        "POST", "/api/v1/events", {"event": durable[1], "payload": {"by": "demo"}}
                    )
                    say(f"POST /api/v1/events {durable[1]} -> {status} woke {out.get('woken')}")
                    emitted = True
            if seen.get(job_id) != f"{job.state}/{job.attempt}{parked}":
                seen[job_id] = f"{job.state}/{job.attempt}{parked}"
                extra = f" attempt {job.attempt}" if job.state in ("running", "failed") else ""
                err = f" ({job.last_error})" if job.state == "failed" and job.last_error else ""
                say(f"job {job_id:<6} {label:<17} {job.state}{extra}{err}{parked}")
            if job_id == long_id and job.state == "running" and not cancelled:
                status, _ = acme.call("DELETE", f"/api/v1/jobs/{job_id}")
                say(f"DELETE /api/v1/jobs/{job_id} (cancel while running) -> {status}")
                cancelled = True
        if all(s.split("/")[0] in FINAL for s in seen.values()) and len(seen) == len(jobs):
            return
        time.sleep(0.25)
    sys.exit("demo: some jobs did not finish in time; see the worker's log")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080")
