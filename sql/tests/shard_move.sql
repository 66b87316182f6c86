-- The shard-side steps of a tenant's move (jobctl._move_out_* on the source, _move_in_* on the
-- target; python/jobctl/shard_move.py runs them in turn). One database plays both shards: the
-- source's jobs are taken out, deleted, then brought in again under another tenant's name.
-- Tenants tap_mv_*.
begin;
select plan(31);

select jobctl.submit_jobs((
    select
        jsonb_agg(jsonb_build_object(
            'tenant_id', 'tap_mv_a', 'queue', 'tap_mv_q', 'payload', jsonb_build_object('i', i),
            'priority', i % 3, 'dedup_key', 'k' || i
        ))
    from generate_series(1, 5) as i
)) is not null as submitted;
select jobctl.submit_job('tap_mv_a', 'tap_mv_q', '{"later": true}', run_at => now() + interval '1 hour');
select jobctl.put_concurrency_limit('tap_mv_a', 'ck', 3);
-- two claimed: one stays running, one fails and waits out its retry
create temporary table tap_mv_claimed on commit drop as
select
    job_id,
    lease_epoch
from jobctl.claim_job('w', array['tap_mv_q'], 2);
select jobctl.fail_job(c.job_id, c.lease_epoch, 'boom')
from (select
    t.job_id,
    t.lease_epoch
from tap_mv_claimed as t
order by t.job_id desc limit 1) as c;

select throws_ok($$select jobctl._move_out_begin('tap_mv_a', 64)$$, 'JC001', null, 'a shard number is 0..63');
select throws_ok($$select jobctl._move_out_begin('tap_mv_nobody', 1)$$, 'P0002', null, 'an unknown tenant');
select jobctl.put_schedule('tap_mv_s', 'nightly', '0 3 * * *', 'tap_mv_q', '{}');
select throws_ok(
    $$select jobctl._move_out_begin('tap_mv_s', 1)$$, 'JC010', 'tenant tap_mv_s has schedules, which a move does not carry',
    'a tenant with schedules is refused'
);
select count(*) from jobctl.submit_workflow('[
    {"name": "a", "tenant_id": "tap_mv_w", "queue": "tap_mv_q", "payload": {}, "run_at": "2030-01-01T00:00:00Z"},
    {"name": "b", "tenant_id": "tap_mv_w", "queue": "tap_mv_q", "payload": {}, "depends_on": ["a"]}
]');
select throws_ok(
    $$select jobctl._move_out_begin('tap_mv_w', 1)$$, 'JC010', null, 'a tenant with waiting jobs is refused'
);
select throws_ok(
    $$select jobctl._move_out_jobs('tap_mv_a', 0, 100)$$, 'JC010', 'tenant tap_mv_a is not moving off this shard',
    'no job is taken out of a tenant that is not moving'
);

create temporary table tap_mv_config on commit drop as select jobctl._move_out_begin('tap_mv_a', 1) as c;
select is((select (c ->> 'was_paused')::boolean from tap_mv_config), false, 'begin records that it was not paused');
select is(
    (
        select paused from jobctl.tenant
        where tenant_id = 'tap_mv_a'
    ), true, 'begin pauses the tenant''s claims here'
);
select is(
    (select jobctl._move_out_begin('tap_mv_a', 1) -> 'started_at'), (select c -> 'started_at' from tap_mv_config),
    'begin again is the same move'
);
select throws_ok($$select jobctl._move_out_begin('tap_mv_a', 2)$$, 'JC010', null, 'another target while moving');
select is(
    (
        select count(*) from jobctl.claim_job('w', array['tap_mv_q'], 10)
        where tenant_id = 'tap_mv_a'
    ), 0::bigint,
    'no claim takes its jobs'
);

create temporary table tap_mv_page on commit drop as select jobctl._move_out_jobs('tap_mv_a', 0, 4) as p;
select is(jsonb_array_length((select p -> 'jobs' from tap_mv_page)), 4, 'a page holds at most max_jobs');
create temporary table tap_mv_rest on commit drop as
select jobctl._move_out_jobs('tap_mv_a', (select (p ->> 'last_id')::bigint from tap_mv_page), 100) as p;
select is(jsonb_array_length((select p -> 'jobs' from tap_mv_rest)), 1, 'the next page has the rest');
select is(
    (
        select count(*) from jobctl._ready
        where tenant_id = 'tap_mv_a'
    )
    + (
        select count(*) from jobctl._delayed
        where tenant_id = 'tap_mv_a'
    )
    + (
        select count(*) from jobctl._held
        where tenant_id = 'tap_mv_a'
    ), 0::bigint,
    'their queue rows are gone: nothing can claim them here'
);
select is(
    (
        select count(*)
        from jsonb_array_elements((select p -> 'jobs' from tap_mv_page) || (select p -> 'jobs' from tap_mv_rest)) as j
        where (j ->> 'job_id')::bigint in (select r.job_id from jobctl._running as r)
    ), 0::bigint,
    'the running job is not taken'
);
select is(
    jsonb_array_length((select jobctl._move_out_jobs('tap_mv_a', 0, 100) -> 'jobs')), 5,
    'taken again (a rerun after a crash): the same jobs'
);
select is(
    jsonb_array_length((select p -> 'events' from tap_mv_page) || (select p -> 'events' from tap_mv_rest)),
    (
        select count(*)::integer from jobctl._event as e
        where e.job_id = (select max(t.job_id) from tap_mv_claimed as t)
    ),
    'the failed job''s events come along'
);

select is(
    jobctl._move_out_delete('tap_mv_a', array(
        select (j ->> 'job_id')::bigint from jsonb_array_elements((select p -> 'jobs' from tap_mv_page)) as j
        union all
        select (j ->> 'job_id')::bigint from jsonb_array_elements((select p -> 'jobs' from tap_mv_rest)) as j
        union all
        select job_id from jobctl._running
        where tenant_id = 'tap_mv_a'
    )), 5, 'delete: the taken jobs, not the running one'
);
select is(
    (
        select count(*) from jobctl.job
        where tenant_id = 'tap_mv_a'
    ), 1::bigint, 'only the running job is left here'
);

-- the target's side, here under another tenant's name
select jobctl._move_in_begin(jsonb_set((select c from tap_mv_config), '{tenant,tenant_id}', '"tap_mv_b"'));
select is(
    (
        select paused from jobctl.tenant
        where tenant_id = 'tap_mv_b'
    ), true, 'the target holds the tenant paused'
);
select is(
    (
        select max_running from jobctl.concurrency_limit
        where tenant_id = 'tap_mv_b' and concurrency_key = 'ck'
    ), null,
    'limits are copied as given (they name tap_mv_a here)'
);
create temporary table tap_mv_in on commit drop as
select jsonb_build_object(
    'jobs', (select jsonb_agg(j || '{"tenant_id": "tap_mv_b"}') from jsonb_array_elements(
        (select p -> 'jobs' from tap_mv_page) || (select p -> 'jobs' from tap_mv_rest)
    ) as j),
    'events', (select p -> 'events' from tap_mv_page) || (select p -> 'events' from tap_mv_rest)
) as p;
select is(jobctl._move_in_jobs((select p from tap_mv_in)), 5, 'import inserts the jobs');
select is(jobctl._move_in_jobs((select p from tap_mv_in)), 0, 'import again inserts nothing');
select is(
    (
        select count(*) from jobctl._ready
        where tenant_id = 'tap_mv_b'
    ), 3::bigint, 'the due jobs are ready'
);
select is(
    (
        select array_agg(retry order by retry) from jobctl._delayed
        where tenant_id = 'tap_mv_b'
    ), array[false, true
    ],
    'the delayed job is delayed, the failed one retrying'
);
select is(
    (
        select array_agg(row(job_id, attempt, priority, run_at, dedup_key, payload)::text order by job_id)
        from jobctl.job
        where tenant_id = 'tap_mv_b'
    ),
    (
        select array_agg(row(j.job_id, j.attempt, j.priority, j.run_at, j.dedup_key, j.payload)::text order by j.job_id)
        from jsonb_populate_recordset(null::jobctl.job, (select p -> 'jobs' from tap_mv_in)) as j
    ),
    'ids, attempts, priorities, run_at, keys and payloads as they were'
);
select jobctl._move_in_finish('tap_mv_b', false);
select is(
    (
        select count(*) from jobctl.claim_job('w', array['tap_mv_q'], 10)
        where tenant_id = 'tap_mv_b'
    ), 3::bigint,
    'after the flip the target claims them'
);

-- the fence on the source
select is(jobctl._move_out_fence('tap_mv_a'), false, 'the fence: first the tenant row');
select is(jobctl._move_out_fence('tap_mv_a'), true, 'then its time');
select throws_ok(
    $$select jobctl.submit_job('tap_mv_a', 'tap_mv_q', '{}')$$, 'JC011', 'tenant tap_mv_a has moved to shard 1',
    'a submit routed by the old placement is refused'
);
select jobctl.put_tenant('tap_mv_0');
update jobctl.tenant set moved_to = 7
where tenant_id = 'tap_mv_0';
select throws_ok(
    $$select jobctl.submit_jobs('[{"tenant_id": "tap_mv_a", "queue": "q", "payload": {}},
        {"tenant_id": "tap_mv_0", "queue": "q", "payload": {}}]')$$,
    'JC011', 'tenant tap_mv_0 has moved to shard 7',
    'a call of two moved tenants names one and its own shard'
);
select is(
    (select (jobctl._move_out_finish('tap_mv_a') ->> 'running')::integer), 1, 'not finished while a job runs here'
);

select * from finish();
rollback;
