"""The HTTP API's workflows against a real server and the real database: depends_on and the
dedup scope on POST /api/v1/jobs, POST /api/v1/workflows, POST /api/v1/batches, GET
/api/v1/batches/{id}, the job's depends_on, workflow_id, batch_id and parent_results, and the errors
(each names its field)."""

from __future__ import annotations

from typing import Any

import httpx
from test_api import (
    Conn,
    MakeToken,
    admin_db,
    app_name,
    assert_error,
    auth,
    client,
    complete_one,
    job_id_of,
    make_token,
    server,
    submit,
    token_ids,
)

__all__ = ["admin_db", "app_name", "client", "make_token", "server", "token_ids"]  # fixtures, used by name


def get(client: httpx.Client, token: str, path: str) -> dict[str, Any]:
    r = client.get(f"/api/v1{path}", headers=auth(token))
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_a_job_with_parents_waits_and_shows_their_results(
    client: httpx.Client, make_token: MakeToken, admin_db: Conn, name: str
) -> None:
    token = make_token(name)
    parent = job_id_of(submit(client, token, queue=name))
    r = submit(client, token, queue=name + "-child", depends_on=[parent], on_parent_failure="wait")
    assert r.status_code == 201, r.text
    child = r.json()["job"]
    assert child["state"] == "waiting"
    assert child["depends_on"] == [parent]
    assert child["parent_results"] == {str(parent): None}
    assert child["workflow_id"] is None and child["batch_id"] is None
    assert complete_one(admin_db, name) == parent
    shown = get(client, token, f"/jobs/{child['job_id']}")["job"]
    assert shown["state"] == "pending"
    assert shown["parent_results"] == {str(parent): None}  # complete_one stores no result
    # in a list, parent_results is not filled (get_job only)
    page = get(client, token, f"/jobs?queue={name}-child")
    assert [j["job_id"] for j in page["jobs"]] == [child["job_id"]]
    assert page["jobs"][0]["depends_on"] == [parent] and page["jobs"][0]["parent_results"] is None


def test_depends_on_another_tenants_job_is_refused_naming_the_field(
    client: httpx.Client, make_token: MakeToken, name: str
) -> None:
    theirs = job_id_of(submit(client, make_token(name + "b"), queue=name))
    token = make_token(name)
    assert_error(
        submit(client, token, queue=name, depends_on=[theirs]), 422, "invalid_request", "depends_on", "JC001"
    )
    # the JSON type is checked before the database
    assert_error(
        submit(client, token, queue=name, depends_on=["x"]), 422, "invalid_request", "depends_on[0]", "JC001"
    )
    assert_error(
        submit(client, token, queue=name, depends_on=[1], on_parent_failure="shrug"),
        422, "invalid_request", "on_parent_failure", "JC001",
    )  # fmt: skip


def test_the_dedup_scope_and_debounce(client: httpx.Client, make_token: MakeToken, name: str) -> None:
    token = make_token(name)
    scoped = {"dedup_key": "sync-7", "dedup_states": ["pending"], "dedup_period": "1 hour"}
    first = submit(client, token, queue=name, payload={"v": 1}, **scoped, dedup_mode="replace")
    assert first.status_code == 201, first.text
    again = submit(client, token, queue=name, payload={"v": 2}, **scoped, dedup_mode="replace")
    assert again.status_code == 200 and again.json()["duplicate"] is True, again.text
    assert again.json()["job"]["job_id"] == first.json()["job"]["job_id"]
    assert again.json()["job"]["payload"] == {"v": 2}  # debounced: the holder took the new payload
    kept = submit(client, token, queue=name, payload={"v": 3}, **scoped | {"dedup_period": 3600})
    assert kept.status_code == 200 and kept.json()["job"]["payload"] == {"v": 2}
    r = submit(client, token, queue=name, dedup_key="k", dedup_mode="bogus")
    assert_error(r, 422, "invalid_request", "dedup_mode", "JC001")
    assert "keep, replace or preserve_run_at" in r.json()["message"]
    assert_error(
        submit(client, token, queue=name, dedup_key="k", dedup_states=["nope"]),
        422, "invalid_request", "dedup_states", "JC001",
    )  # fmt: skip


def test_submit_a_workflow(client: httpx.Client, make_token: MakeToken, admin_db: Conn, name: str) -> None:
    token = make_token(name)
    jobs = [
        {"name": "extract", "queue": name, "payload": {"day": 1}},
        {"name": "clean", "queue": name + "-2", "payload": {}, "depends_on": ["extract"]},
        {"name": "report", "queue": name + "-2", "payload": {}, "depends_on": ["clean", "extract"]},
    ]
    r = client.post("/api/v1/workflows", json={"jobs": jobs}, headers=auth(token))
    assert r.status_code == 201, r.text
    out = r.json()
    ids = {j["name"]: j["job_id"] for j in out["jobs"]}
    assert list(ids) == ["extract", "clean", "report"]
    assert out["workflow_id"] == ids["extract"]
    report = get(client, token, f"/jobs/{ids['report']}")["job"]
    assert report["state"] == "waiting" and report["workflow_id"] == out["workflow_id"]
    assert sorted(report["depends_on"]) == sorted([ids["clean"], ids["extract"]])
    assert complete_one(admin_db, name) == ids["extract"]
    assert get(client, token, f"/jobs/{ids['clean']}")["job"]["state"] == "pending"
    assert get(client, token, f"/jobs/{ids['report']}")["job"]["state"] == "waiting"


def test_a_bad_workflow_names_the_job_and_field(
    client: httpx.Client, make_token: MakeToken, name: str
) -> None:
    token = make_token(name)
    theirs = job_id_of(submit(client, make_token(name + "b"), queue=name))

    def post(jobs: list[dict[str, Any]], **more: Any) -> httpx.Response:
        return client.post("/api/v1/workflows", json={"jobs": jobs, **more}, headers=auth(token))

    a = {"name": "a", "queue": name, "payload": {}}
    later = {"name": "b", "queue": name, "payload": {}, "depends_on": ["c"]}
    assert_error(post([a, later]), 422, "invalid_request", "jobs[1].depends_on", "JC001")
    r = post([a, {**later, "depends_on": [theirs]}])
    assert r.status_code == 422 and r.json()["field"] in ("depends_on", "jobs[1].depends_on"), r.text
    assert_error(post([a, {**a}]), 422, "invalid_request", "jobs[1].name", "JC001")
    r = post([{**a, "priority": 1000}])
    assert_error(r, 422, "invalid_request", "jobs[0].priority", "JC001")
    assert r.json()["message"].startswith("jobs[0].priority must be an integer from -100 to 100")
    assert_error(post([a], on_parent_failure="maybe"), 422, "invalid_request", "on_parent_failure", "JC001")
    assert_error(post([{"queue": name, "payload": {}}]), 422, "invalid_request", "jobs[0].name", "JC001")
    assert_error(post([]), 422, "invalid_request", "jobs", "JC001")
    r = post([{**a, "tenant_id": name + "b"}])
    assert_error(r, 403, "forbidden", "jobs[0].tenant_id", "42501")
    r = client.post("/api/v1/workflows", json={"jobs": [a]}, headers=auth(make_token(name, ["jobs:read"])))
    assert r.status_code == 403, r.text


def test_submit_and_read_a_batch(
    client: httpx.Client, make_token: MakeToken, admin_db: Conn, name: str
) -> None:
    token = make_token(name)
    body = {
        "jobs": [{"queue": name, "payload": {"img": 1}}, {"queue": name, "payload": {"img": 2}}],
        "on_finish": {"queue": name + "-done", "payload": {"album": 7}},
        "on_discard": {"queue": name + "-done", "payload": {"oops": True}},
    }
    r = client.post("/api/v1/batches", json=body, headers=auth(token))
    assert r.status_code == 201, r.text
    made = r.json()
    assert len(made["job_ids"]) == 2 and made["on_success_id"] is None
    batch = get(client, token, f"/batches/{made['batch_id']}")["batch"]
    assert batch["size"] == 2 and batch["finished_at"] is None and batch["counts"] == {"pending": 2}
    assert (batch["on_finish"], batch["on_discard"]) == (made["on_finish_id"], made["on_discard_id"])
    callback = get(client, token, f"/jobs/{made['on_finish_id']}")["job"]
    assert callback["state"] == "waiting" and callback["batch_id"] == made["batch_id"]
    assert callback["tenant_id"] == name
    complete_one(admin_db, name)
    complete_one(admin_db, name)
    batch = get(client, token, f"/batches/{made['batch_id']}")["batch"]
    assert batch["finished_at"] is not None
    assert batch["counts"] == {"completed": 2, "dead": 0, "cancelled": 0}
    assert get(client, token, f"/jobs/{made['on_finish_id']}")["job"]["state"] == "pending"
    assert get(client, token, f"/jobs/{made['on_discard_id']}")["job"]["state"] == "cancelled"
    # another tenant's batch is as unknown as a missing one
    r = client.get(f"/api/v1/batches/{made['batch_id']}", headers=auth(make_token(name + "b")))
    assert_error(r, 404, "not_found", "id", "P0002")
    assert_error(client.get("/api/v1/batches/0", headers=auth(token)), 422, "invalid_request", "id", "JC001")


def test_a_bad_batch_names_its_field(client: httpx.Client, make_token: MakeToken, name: str) -> None:
    token = make_token(name)

    def post(**body: Any) -> httpx.Response:
        return client.post("/api/v1/batches", json=body, headers=auth(token))

    job = {"queue": name, "payload": {}}
    assert_error(post(jobs=[job]), 422, "invalid_request", "on_finish", "JC001")  # no callback
    assert_error(post(jobs=[], on_finish=job), 422, "invalid_request", "jobs", "JC001")
    r = post(jobs=[job, {**job, "dedup_key": "k"}], on_finish=job)
    assert_error(r, 422, "invalid_request", "jobs[1].dedup_key", "JC001")
    r = post(jobs=[job], on_finish={**job, "tenant_id": name + "b"})
    assert_error(r, 403, "forbidden", "on_finish.tenant_id", "42501")
    r = post(jobs=[job], on_success={**job, "unknown": 1})
    assert_error(r, 422, "invalid_request", "on_success.unknown", "JC001")


def test_the_jobs_list_filters_on_waiting(client: httpx.Client, make_token: MakeToken, name: str) -> None:
    token = make_token(name)
    parent = job_id_of(submit(client, token, queue=name))
    child = job_id_of(submit(client, token, queue=name, depends_on=[parent]))
    page = get(client, token, f"/jobs?status=waiting&queue={name}")
    assert [j["job_id"] for j in page["jobs"]] == [child]


def test_the_openapi_document_has_the_endpoints(client: httpx.Client) -> None:
    doc = client.get("/api/v1/openapi.json").json()
    assert {"/api/v1/workflows", "/api/v1/batches", "/api/v1/batches/{id}"} <= set(doc["paths"])
    submit_fields = doc["components"]["schemas"]["JobSubmit"]["properties"]
    assert {"depends_on", "on_parent_failure", "dedup_states", "dedup_period", "dedup_mode"} <= set(
        submit_fields
    )
    assert "waiting" in doc["components"]["schemas"]["Job"]["properties"]["state"]["enum"]


def test_emit_an_event_and_read_a_jobs_steps(
    client: httpx.Client, make_token: MakeToken, admin_db: Conn, name: str
) -> None:
    """POST /api/v1/events wakes the tenant's waiting job (scope events:emit; the first emit wins);
    GET /api/v1/jobs/{id}/steps shows what it saved; another tenant's token neither emits nor reads."""
    token, other = make_token(name), make_token(name + "_o")
    job = job_id_of(submit(client, token, queue=name))
    row = admin_db.execute(
        "select job_id, lease_epoch from jobctl.claim_job('api-test', array[%s], 1)", (name,)
    ).fetchone()
    assert row is not None and row[0] == job
    admin_db.execute("select jobctl.save_step(%s, %s, 'first', '{\"n\": 1}')", row)
    outcome = admin_db.execute("select outcome from jobctl.await_event(%s, %s, 'go')", row).fetchone()
    assert outcome == ("suspended",)

    r = client.post("/api/v1/events", headers=auth(token), json={"event": "go", "payload": {"by": "api"}})
    assert r.status_code == 200, r.text
    assert r.json() == {"woken": 1}
    r = client.post("/api/v1/events", headers=auth(token), json={"event": "go", "payload": {"by": "again"}})
    assert r.json() == {"woken": 0}
    steps = get(client, token, f"/jobs/{job}/steps")["steps"]
    assert [(s["step"], s["result"], s["attempt"]) for s in steps] == [("first", {"n": 1}, 1)]
    assert get(client, other, f"/jobs/{job}/steps") == {"steps": []}

    r = client.post("/api/v1/events", headers=auth(other), json={"tenant_id": name, "event": "go"})
    assert r.status_code == 403, r.text
    no_scope = make_token(name, ["jobs:read", "jobs:submit"])
    r = client.post("/api/v1/events", headers=auth(no_scope), json={"event": "x"})
    assert r.status_code == 403, r.text
    r = client.post("/api/v1/events", headers=auth(token), json={"event": ""})
    assert r.status_code == 422 and r.json()["field"] == "event", r.text
