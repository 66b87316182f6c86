-- max_pending: a tenant's unfinished jobs (pending, failed, running) are admitted up to its limit;
-- over it, JC004 with `retry_after` on its own DETAIL line and nothing written. Completing,
-- cancelling or killing a job frees room; retrying a finished one takes room; tick's recount fixes
-- drift. Tenants tap_quota_*.
begin;
select plan(16);

create function pg_temp.submit(p_n integer)
returns bigint
language sql as $$
    select count(*) from jobctl.submit_jobs((
        select jsonb_agg(jsonb_build_object('tenant_id', 'tap_quota_a', 'queue', 'tap_quota_q', 'payload', '{}'::jsonb))
        from generate_series(1, p_n)
    ))
$$;

-- two jobs exist before the limit: put_tenant counts them
select pg_temp.submit(2);
select jobctl.put_tenant('tap_quota_a', max_pending => 3);
select isnt((
    select admitted from jobctl.tenant
    where tenant_id = 'tap_quota_a'
), null, 'max_pending gets counters');
select is(pg_temp.submit(1), 1::bigint, 'room for one more (2 were there when the limit was set)');
select throws_ok(
    $$select pg_temp.submit(1)$$, 'JC004', 'tenant tap_quota_a is over its max_pending (3 unfinished + 1 new > 3)',
    'the next is over the quota: JC004 naming the counts'
);
do $$
begin
    perform pg_temp.submit(1);
exception when sqlstate 'JC004' then
    declare
        v_detail text;
    begin
        get stacked diagnostics v_detail = pg_exception_detail;
        create temp table quota_detail as select v_detail as detail;
    end;
end
$$;
select
    is(
        (select detail from quota_detail),
        E'field: tenant_id\npending: 3\nretry_after: 1',
        'its DETAIL: field, pending, retry_after'
    );
select is((
    select count(*) from jobctl.job
    where tenant_id = 'tap_quota_a'
), 3::bigint, 'nothing was written over the quota');

-- completing frees room
create temp table got as select * from jobctl.claim_job('w', array['tap_quota_q'], 2);
select is((select count(*) from got), 2::bigint, 'two are claimed (running still counts)');
select throws_ok($$select pg_temp.submit(1)$$, 'JC004', null, 'running jobs still count');
select is((
    select jobctl.complete_job(job_id, lease_epoch) from got
    order by job_id limit 1
), true, 'one is completed');
select is(pg_temp.submit(1), 1::bigint, 'a completed job frees its room');

-- cancelling frees room, retrying a cancelled job would take it again
select is(jobctl.cancel_job((
    select max(job_id) from jobctl.job
    where tenant_id = 'tap_quota_a'
)), 'cancelled', 'a cancel');
select is(pg_temp.submit(1), 1::bigint, 'a cancelled job frees its room');
create function pg_temp.counted()
returns bigint
language sql as $$
    select coalesce(pg_sequence_last_value(admitted), 0) - coalesce(pg_sequence_last_value(finished), 0) + pending_offset
    from jobctl.tenant where tenant_id = 'tap_quota_a'
$$;
select throws_ok(
    format('select jobctl.retry_job(%s)', (
        select job_id from jobctl.job
        where tenant_id = 'tap_quota_a' and state = 'cancelled'
    )),
    'JC004', 'tenant tap_quota_a is over its max_pending (3 unfinished + 1 retried > 3)',
    'retrying a cancelled job needs room too: the tenant is at its limit'
);
select is(pg_temp.counted(), 3::bigint, 'and the refused retry took none');

-- drift (a counter off by 5) is fixed by tick's recount
select setval(
    (
        select admitted from jobctl.tenant
        where tenant_id = 'tap_quota_a'
    ),
    pg_sequence_last_value((
        select admitted from jobctl.tenant
        where tenant_id = 'tap_quota_a'
    )) + 5
);
select jobctl.tick();
select is(
    pg_temp.counted(),
    (
        select count(*) from jobctl.job
        where tenant_id = 'tap_quota_a' and state in ('pending', 'failed', 'running')
    ),
    'after tick the count is exact again'
);

-- a recount that changes nothing writes nothing: a tenant row tick updates stays locked until it
-- commits, and claims skip a locked tenant row
create temp table quota_row as
select ctid as row_version from jobctl.tenant
where tenant_id = 'tap_quota_a';
select jobctl.tick();
select is(
    (
        select ctid from jobctl.tenant
        where tenant_id = 'tap_quota_a'
    ),
    (select row_version from quota_row),
    'a recount with nothing to fix leaves the tenant row as it was'
);

-- jobs held for a concurrency key's place and children waiting for a parent are unfinished too:
-- the recount counts them
select jobctl.put_tenant('tap_quota_b', max_pending => 10);
select jobctl.put_concurrency_limit('tap_quota_b', 'k', 1);
select count(*) from jobctl.submit_jobs((
    select
        jsonb_agg(
            jsonb_build_object(
                'tenant_id', 'tap_quota_b', 'queue', 'tap_quota_q', 'payload', '{}'::jsonb, 'concurrency_key', 'k'
            )
        )
    from generate_series(1, 3)
));
select count(*) from jobctl.submit_workflow('[
  {"name": "p", "tenant_id": "tap_quota_b", "queue": "tap_quota_q", "payload": {}},
  {"name": "c", "tenant_id": "tap_quota_b", "queue": "tap_quota_q", "payload": {}, "depends_on": ["p"]}
]');
select jobctl._recount_pending('tap_quota_b');
select is(
    (
        select coalesce(pg_sequence_last_value(admitted), 0) - coalesce(pg_sequence_last_value(finished), 0) + pending_offset
        from jobctl.tenant
        where tenant_id = 'tap_quota_b'
    ),
    5::bigint,
    'the recount counts held jobs and waiting children (1 ready + 2 held, a parent and its child)'
);

select * from finish();
rollback;
