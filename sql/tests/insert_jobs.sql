-- jobctl._insert_jobs: the "insert" step of jobctl._submit: the new jobs and their rows, by one
-- statement, ids back in input order. Tenants tap_ij_*.
begin;
select plan(12);
set local jit = off;
\ir helpers.psql

select has_function(
    'jobctl', '_insert_jobs',
    array['jobctl._job_spec[]', 'timestamp with time zone', 'boolean', 'boolean', 'text', 'timestamp with time zone', 'text[]'],
    '_insert_jobs exists'
);

select jobctl.put_tenant('tap_ij_a');
create temp table plain as
select
    u.id,
    u.i
from unnest(jobctl._insert_jobs(
    jobctl._job_specs($$[
        {"tenant_id": "tap_ij_a", "queue": "tap_ij_q", "payload": {"i": 1}, "priority": 5, "max_attempts": 7},
        {"tenant_id": "tap_ij_a", "queue": "tap_ij_q", "payload": {"i": 2}, "run_at": "2030-01-01T00:00:00Z"},
        {"tenant_id": "tap_ij_a", "queue": "tap_ij_q", "payload": {"i": 3}, "concurrency_key": "c"},
        {"tenant_id": "tap_ij_a", "queue": "tap_ij_q", "payload": {"i": 4}, "dedup_key": "d", "traceparent": "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"}
    ]$$, false),
    now(), false, false, null, null, null
)) with ordinality as u (id, i);

select results_eq(
    $$select (j.payload ->> 'i')::bigint from plain as p inner join jobctl.job as j on j.job_id = p.id order by p.i$$,
    $$values (1::bigint), (2), (3), (4)$$,
    'the ids come back in input order'
);
select results_eq(
    $$select j.state, j.priority::integer, j.max_attempts::integer, j.dedup_key, j.concurrency_key,
          j.traceparent is not null, j.created_at = now()
      from plain as p inner join jobctl.job as j on j.job_id = p.id order by p.i$$,
    $$values ('pending', 5, 7, null, null, false, true), ('pending', 0, 3, null, null, false, true),
        ('pending', 0, 3, null, 'c', false, true), ('pending', 0, 3, 'd', null, true, true)$$,
    'the job rows hold the specs (max_attempts NULL: 3)'
);
select results_eq(
    $$select pg_temp.queued(p.id) from plain as p order by p.i$$,
    $$values ('ready'), ('delayed'), ('ready'), ('ready')$$,
    'due: ready; later: delayed; a due job with a concurrency key admitted (no limit) from _held'
);
select results_eq(
    $$select sum(submitted)::integer, sum(pending)::integer, sum(delayed)::integer, sum(waiting)::integer
      from jobctl._stat_delta where tenant_id = 'tap_ij_a'$$,
    $$values (4, 3, 1, 0)$$,
    'the counters: 4 submitted, 3 pending, 1 delayed'
);

-- a workflow: ids drawn first (p_linked), after finds parents of the call by position
create temp table wf as
select
    u.id,
    u.i
from unnest(jobctl._insert_jobs(
    array[
        row(
            'tap_ij_a', 'tap_ij_w', '{}', 0, null, null, null, null, null, null, null, null, null, null, true, null, null, null,
            null, null
        )::jobctl._job_spec,
        row(
            'tap_ij_a', 'tap_ij_w', '{}', 0, null, null, null, null, null, null, null, null, null, '{1}', false, null, null,
            null, null, null
        )::jobctl._job_spec
    ],
    now(), true, true, 'tap_ij_schedule', timestamptz '2026-01-01 00:00:00+00', array['first', 'second']
)) with ordinality as u (id, i);
select results_eq(
    $$select j.state, j.depends_on, j.workflow_id, j.workflow_name, j.schedule_name, j.fire_time
      from wf as w inner join jobctl.job as j on j.job_id = w.id order by w.i$$,
    format(
        $$values ('pending', null::bigint[], %1$s::bigint, 'first', 'tap_ij_schedule', timestamptz '2026-01-01 00:00:00+00'),
        ('waiting', array[%1$s::bigint], %1$s, 'second', 'tap_ij_schedule', timestamptz '2026-01-01 00:00:00+00')$$,
        (
            select wf.id from wf
            where wf.i = 1
        )
    ),
    'after: the parent of the call by position; the workflow id is the first job''s; names, schedule and fire time recorded'
);
select is(
    (
        select row(w.cancel_on_failure, w.batch_id)::text from jobctl._waiting as w
        where w.job_id = (
            select wf.id from wf
            where wf.i = 2
        )
    ),
    '(f,)', 'the child waits (_waiting, its cancel_on_failure as given)'
);
select is(
    (
        select array_agg(row(e.parent_id, e.child_id)::text) from jobctl._edge as e
        where e.child_id = (
            select wf.id from wf
            where wf.i = 2
        )
    ),
    array[row((
        select wf.id from wf
        where wf.i = 1), (
        select wf.id from wf
        where wf.i = 2
    ))::text],
    'and its edge is recorded (jobctl._link_parents)'
);
select is(pg_temp.queued((
    select wf.id from wf
    where wf.i = 2
)), 'nowhere', 'a waiting job has no queue row');

-- a batch's callback waits for the batch (callback_of): its batch_id, no edge
create temp table cb as
select jobctl._insert_jobs(
    array[row(
        'tap_ij_a', 'tap_ij_cb', '{}', 0, null, null, null, null, null, null, null, null, null, null, false, null, 99,
        null, null, null
    )::jobctl._job_spec],
    now(), false, false, null, null, null
) as ids;
select is(
    (
        select row(j.state, j.batch_id, w.batch_id)::text from jobctl.job as j
        inner join jobctl._waiting as w on w.job_id = j.job_id
        where j.job_id = (select cb.ids[1] from cb)
    ),
    '(waiting,99,99)', 'a callback waits with its batch''s id'
);
select is(
    (
        select count(*) from jobctl._edge as e
        where e.child_id = (select cb.ids[1] from cb)
    ), 0::bigint, 'and has no edge'
);
select is(jobctl._insert_jobs(null, now(), false, false, null, null, null), null, 'no specs (all repeats): no jobs');

select * from finish();
rollback;
