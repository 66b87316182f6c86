"""jobctl.Client and jobctl.AsyncClient's workflows on the real database: depends_on and the
dedup scope on submit and submit_many, submit_workflow, submit_batch, get_batch, parent_results,
workflow_jobs, the new JobInfo fields, their errors, and a workflow inside the caller's transaction."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import timedelta

import psycopg
import pytest
from jobctl import AsyncClient, Batch, BatchSubmitted, Client, JobSpec, Workflow, errors

Conn = psycopg.Connection[tuple[object, ...]]


@pytest.fixture
def client(dsn: str) -> Iterator[Client]:
    with Client(dsn) as c:
        yield c


def complete(conn: Conn, queue: str, result: object = None) -> int:
    row = conn.execute("select job_id, lease_epoch from jobctl.claim_job('client-test', array[%s])", (queue,))
    job_id, epoch = row.fetchone() or (None, None)
    assert job_id is not None
    conn.execute("select jobctl.complete_job(%s, %s, %s::jsonb)", (job_id, epoch, json.dumps(result)))
    return int(str(job_id))


def test_submit_with_parents_waits_and_reads_their_results(client: Client, name: str, conn: Conn) -> None:
    a = client.submit(name, name, {})
    b = client.submit(name, name, {})
    child = client.submit(name, name + "-c", {}, depends_on=[a.job_id, b.job_id], on_parent_failure="wait")
    job = client.get_job(child.job_id)
    assert job is not None and job.state == "waiting"
    assert sorted(job.depends_on or []) == [a.job_id, b.job_id]
    assert (job.workflow_id, job.batch_id) == (None, None)
    assert job.parent_results == {str(a.job_id): None, str(b.job_id): None}
    assert [j.job_id for j in client.list_jobs(name, state="waiting")] == [child.job_id]
    assert [j.job_id for j in client.find_jobs({"tenant_id": name, "state": "waiting"})] == [child.job_id]
    assert complete(conn, name, {"rows": 1}) == a.job_id
    assert client.get_job(child.job_id).state == "waiting"  # type: ignore[union-attr]
    assert complete(conn, name, [2]) == b.job_id
    assert client.get_job(child.job_id).state == "pending"  # type: ignore[union-attr]
    assert client.parent_results(child.job_id) == {str(a.job_id): {"rows": 1}, str(b.job_id): [2]}
    assert client.parent_results(a.job_id) is None  # no parents
    assert client.parent_results(2**62) is None  # unknown
    # in a list, parent_results is left out (get_job only)
    (listed,) = client.list_jobs(name, queue=name + "-c")
    assert listed.depends_on and listed.parent_results is None


def test_a_dead_parent_cancels_its_child(client: Client, name: str, conn: Conn) -> None:
    a = client.submit(name, name, {})
    child = client.submit(name, name, {}, depends_on=[a.job_id])
    waits = client.submit(name, name, {}, depends_on=[a.job_id], on_parent_failure="wait")
    client.cancel_job(a.job_id)
    assert client.get_job(child.job_id).state == "cancelled"  # type: ignore[union-attr]
    assert client.get_job(waits.job_id).state == "waiting"  # type: ignore[union-attr]
    with pytest.raises(errors.IllegalTransition) as e:
        client.retry_job(waits.job_id)
    assert e.value.sqlstate == "JC010"
    assert client.cancel_job(waits.job_id) == "cancelled"


def test_dedup_scope_and_debounce(client: Client, name: str) -> None:
    scope = {"dedup_key": "sync", "dedup_states": ("pending",), "dedup_period": timedelta(hours=1)}
    first = client.submit(name, name, {"v": 1}, **scope)  # type: ignore[arg-type]
    again = client.submit(name, name, {"v": 2}, dedup_mode="replace", **scope)  # type: ignore[arg-type]
    assert again.job_id == first.job_id and again.duplicate
    assert client.get_job(first.job_id).payload == {"v": 2}  # type: ignore[union-attr]
    kept = client.submit_many([JobSpec(name, name, {"v": 3}, dedup_key="sync", dedup_states=["pending"],
                                       dedup_period="1 hour", dedup_mode="keep")])  # fmt: skip
    assert kept[0].job_id == first.job_id and kept[0].duplicate
    assert client.get_job(first.job_id).payload == {"v": 2}  # type: ignore[union-attr]
    client.cancel_job(first.job_id)
    # the key holds only while its newest job is pending: a cancelled holder lets a new job in
    assert not client.submit(name, name, {}, **scope).duplicate  # type: ignore[arg-type]


def test_bad_input_names_the_field(client: Client, name: str) -> None:
    theirs = client.submit(name + "b", name, {})
    with pytest.raises(errors.InvalidInput) as e:
        client.submit(name, name, {}, depends_on=[theirs.job_id])
    assert (e.value.sqlstate, e.value.field) == ("JC001", "depends_on")
    with pytest.raises(errors.InvalidInput) as e:
        client.submit(name, name, {}, dedup_key="k", dedup_mode="bogus")
    assert (e.value.sqlstate, e.value.field) == ("JC001", "dedup_mode")
    with pytest.raises(errors.InvalidInput) as e:
        client.submit(name, name, {}, depends_on=[theirs.job_id], on_parent_failure="shrug")
    assert e.value.field == "on_parent_failure"
    with pytest.raises(errors.InvalidInput) as e:
        client.submit(name, name, {}, dedup_key="k", dedup_states=["nope"])
    assert e.value.field == "dedup_states"
    with pytest.raises(errors.InvalidInput) as e:
        client.get_batch(0)
    assert e.value.field == "batch_id"
    with pytest.raises(errors.InvalidInput) as e:
        client.parent_results(-1)
    assert e.value.field == "job_id"


def test_submit_workflow(client: Client, name: str, conn: Conn) -> None:
    old = client.submit(name, name, {})
    flow = client.submit_workflow([
        {"name": "extract", "tenant_id": name, "queue": name, "payload": {"day": 1}},
        JobSpec(name, name, {}, name="clean", depends_on=["extract"]),
        JobSpec(name, name, {}, name="report", depends_on=["clean", old.job_id]),
    ])  # fmt: skip
    assert isinstance(flow, Workflow) and list(flow.job_ids) == ["extract", "clean", "report"]
    assert flow.workflow_id == flow.job_ids["extract"]
    jobs = client.workflow_jobs(flow.workflow_id)
    assert [j.job_id for j in jobs] == list(flow.job_ids.values())
    assert [j.state for j in jobs] == ["pending", "waiting", "waiting"]
    assert {j.workflow_id for j in jobs} == {flow.workflow_id}
    assert client.workflow_jobs(old.job_id) == []  # not a workflow
    # errors name the job: jobs[i] is the index, the field the key
    with pytest.raises(errors.InvalidInput) as e:
        client.submit_workflow([JobSpec(name, name, {}, name="b", depends_on=["a"]),
                                JobSpec(name, name, {}, name="a")])  # fmt: skip
    assert (e.value.field, e.value.index) == ("depends_on", 0)
    with pytest.raises(errors.InvalidInput) as e:
        client.submit_workflow([JobSpec(name, name, {})])
    assert (e.value.field, e.value.index) == ("name", 0)
    with pytest.raises(errors.InvalidInput) as e:
        client.submit_workflow([])
    assert (e.value.field, e.value.sqlstate) == ("jobs", "JC001")
    with pytest.raises(errors.InvalidInput) as e:
        client.submit_workflow([JobSpec(name, name, {}, name="x")], on_parent_failure="maybe")
    assert e.value.field == "on_parent_failure"


def test_submit_workflow_in_the_callers_transaction(client: Client, name: str, dsn: str) -> None:
    with psycopg.connect(dsn) as own:
        flow = client.submit_workflow([JobSpec(name, name, {}, name="a")], conn=own)
        own.rollback()
    assert client.get_job(flow.workflow_id) is None


def test_submit_and_get_a_batch(client: Client, name: str, conn: Conn) -> None:
    made = client.submit_batch(
        [JobSpec(name, name, {"i": i}) for i in range(3)],
        on_success={"queue": name + "-cb", "payload": {"ok": True}},
        on_discard=JobSpec(name, name + "-cb", {"ok": False}),
    )
    assert isinstance(made, BatchSubmitted) and len(made.job_ids) == 3 and made.on_finish_id is None
    batch = client.get_batch(made.batch_id)
    assert isinstance(batch, Batch)
    assert (batch.tenant_id, batch.size, batch.finished_at, batch.counts) == (name, 3, None, {"pending": 3})
    assert (batch.on_success, batch.on_discard) == (made.on_success_id, made.on_discard_id)
    assert client.get_job(made.job_ids[0]).batch_id == made.batch_id  # type: ignore[union-attr]
    complete(conn, name)
    complete(conn, name)
    client.cancel_job(made.job_ids[2])
    batch = client.get_batch(made.batch_id)
    assert batch is not None and batch.finished_at is not None
    assert batch.counts == {"completed": 2, "dead": 0, "cancelled": 1}
    assert client.get_job(made.on_discard_id).state == "pending"  # type: ignore[arg-type, union-attr]
    assert client.get_job(made.on_success_id).state == "cancelled"  # type: ignore[arg-type, union-attr]
    assert client.get_batch(2**62) is None
    with pytest.raises(errors.InvalidInput) as e:
        client.submit_batch([JobSpec(name, name, {})])
    assert e.value.field == "on_finish"
    with pytest.raises(errors.InvalidInput) as e:
        client.submit_batch([JobSpec(name, name, {}, dedup_key="k")], on_finish={"queue": "q", "payload": {}})
    assert (e.value.field, e.value.index) == ("dedup_key", 0)
    with pytest.raises(errors.InvalidInput) as e:  # refused before the database
        client.submit_batch([JobSpec(name, name, {})], on_finish={"queue": "q", "payload": {1j}})
    assert (e.value.field, e.value.sqlstate) == ("on_finish", "22P02")


def test_the_async_client(dsn: str, name: str, conn: Conn) -> None:
    async def scenario() -> None:
        async with AsyncClient(dsn) as c:
            a = await c.submit(name, name, {})
            child = await c.submit(
                name, name, {}, depends_on=[a.job_id], dedup_key="k", dedup_states=["waiting"]
            )
            again = await c.submit(
                name, name, {}, depends_on=[a.job_id], dedup_key="k", dedup_states=["waiting"]
            )
            assert again == child.__class__(child.job_id, True)
            flow = await c.submit_workflow([JobSpec(name, name, {}, name="x"),
                                            JobSpec(name, name, {}, name="y", depends_on=["x"])])  # fmt: skip
            assert [j.job_id for j in await c.workflow_jobs(flow.workflow_id)] == list(flow.job_ids.values())
            made = await c.submit_batch([JobSpec(name, name, {})], on_finish={"queue": name, "payload": {}})
            batch = await c.get_batch(made.batch_id)
            assert batch is not None and batch.size == 1
            assert await c.parent_results(child.job_id) == {str(a.job_id): None}
            with pytest.raises(errors.InvalidInput) as e:
                await c.submit_workflow([JobSpec(name, name, {})])
            assert e.value.field == "name"

    asyncio.run(scenario())
