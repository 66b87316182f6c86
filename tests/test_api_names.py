"""The HTTP API's parameter names against a real server and the real database:
`GET /api/v1/jobs` filters by `state` (the name the CLI, the dashboard and SQL use), `status` is its
alias, and a query parameter no route declares is refused with 422, as an unknown body field is."""

from __future__ import annotations

import httpx
from test_api import (
    Conn,
    MakeToken,
    admin_db,
    app_name,
    assert_error,
    auth,
    client,
    job_id_of,
    make_token,
    server,
    submit,
    token_ids,
)

__all__ = ["admin_db", "app_name", "client", "make_token", "server", "token_ids"]  # fixtures, used by name


def ids(r: httpx.Response) -> set[int]:
    assert r.status_code == 200, r.text
    return {int(j["job_id"]) for j in r.json()["jobs"]}


def test_list_filters_by_state_and_status_alike(
    client: httpx.Client, make_token: MakeToken, admin_db: Conn, name: str
) -> None:
    token = make_token(name)
    doomed = job_id_of(submit(client, token, queue=name, max_attempts=1))
    row = admin_db.execute(
        "select job_id, lease_epoch from jobctl.claim_job('api-test', array[%s])", (name,)
    ).fetchone()
    assert row is not None and row[0] == doomed
    assert admin_db.execute("select jobctl.fail_job(%s, %s, 'boom', false)", row).fetchone() == ("dead",)
    waiting = job_id_of(submit(client, token, queue=name))
    listed = lambda **q: client.get("/api/v1/jobs", params={"queue": name, **q}, headers=auth(token))  # noqa: E731

    assert ids(listed()) == {doomed, waiting}
    assert ids(listed(state="dead")) == {doomed}  # was every job, with 200: `state` was ignored
    assert ids(listed(state="pending")) == {waiting}
    assert ids(listed(status="dead")) == {doomed}  # the alias
    assert ids(listed(state="dead", status="dead")) == {doomed}
    assert_error(listed(state="dead", status="pending"), 422, "invalid_request", "status", "JC001")
    r = listed(state="sleeping")
    assert_error(r, 422, "invalid_request", "state", "JC001")
    assert r.json()["message"].startswith("state must be one of pending, running"), r.json()


def test_an_unknown_query_parameter_is_refused(
    client: httpx.Client, make_token: MakeToken, name: str
) -> None:
    token = make_token(name)
    job = job_id_of(submit(client, token, queue=name))
    r = client.get("/api/v1/jobs", params={"stat": "dead"}, headers=auth(token))
    assert_error(r, 422, "invalid_request", "stat", "JC001")
    assert r.json()["message"] == "stat: unknown field"
    assert r.json()["errors"] == [{"field": "stat", "reason": "unknown field"}]
    r = client.get("/api/v1/jobs", params={"stat": "dead", "limt": "5", "limit": "5"}, headers=auth(token))
    assert_error(r, 422, "invalid_request", "stat", "JC001")
    assert r.json()["message"] == "stat: unknown field (and 1 more)"
    # every API router, every method
    assert_error(client.get(f"/api/v1/jobs/{job}", params={"wiat": "5"}, headers=auth(token)), 422,
                 "invalid_request", "wiat", "JC001")  # fmt: skip
    assert_error(client.get("/api/v1/schedules", params={"x": "1"}, headers=auth(token)), 422,
                 "invalid_request", "x", "JC001")  # fmt: skip
    assert_error(client.post(f"/api/v1/jobs/{job}/retry", params={"force": "1"}, headers=auth(token)), 422,
                 "invalid_request", "force", "JC001")  # fmt: skip
    assert_error(client.get("/api/v1/queues", params={"x": "1"}, headers=auth(token)), 422,
                 "invalid_request", "x", "JC001")  # fmt: skip
    assert_error(client.get("/api/v1/batches/1", params={"x": "1"}, headers=auth(token)), 422,
                 "invalid_request", "x", "JC001")  # fmt: skip
    r = client.delete(f"/api/v1/jobs/{job}", params={"reason": "x"}, headers=auth(token))
    assert_error(r, 422, "invalid_request", "reason", "JC001")
    r = client.get(f"/api/v1/jobs/{job}", headers=auth(token))
    assert r.json()["job"]["state"] == "pending"  # not cancelled
    # the declared ones pass
    assert client.get(f"/api/v1/jobs/{job}", params={"wait": "0"}, headers=auth(token)).status_code == 200
    r = client.get("/api/v1/jobs", params={"queue": name, "limit": "5"}, headers=auth(token))
    assert r.status_code == 200
