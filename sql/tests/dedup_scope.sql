-- Uniqueness scoped by state and period, and debounce (dedup_states, dedup_period, dedup_mode on
-- submit_job and submit_jobs). Racing submitters: tests/test_workflows.py. Tenants tap_dedup_*.
begin;
select plan(26);
set local jit = off;
\ir helpers.psql

create function pg_temp.submit(
    p_tenant text, p_payload jsonb, p_states text[] default null,
    p_period interval default null, p_mode text default null, p_run_at timestamptz default null
)
returns bigint
language sql as $$
    select job_id from jobctl.submit_job(p_tenant, p_tenant, p_payload, dedup_key => 'k', run_at => p_run_at,
        dedup_states => p_states, dedup_period => p_period, dedup_mode => p_mode)
$$;
create function pg_temp.finish(p_job_id bigint) returns void
language plpgsql as $$
declare
    v record;
begin
    select * into v from jobctl.claim_job('tap_dedup_w', array[(select j.queue from jobctl.job as j where j.job_id = p_job_id)], 1);
    if v.job_id <> p_job_id then
        raise exception 'claimed % instead of %', v.job_id, p_job_id;
    end if;
    perform jobctl.complete_job(v.job_id, v.lease_epoch);
end
$$;

-- default: every state holds the key while the job is in hot storage
create temp table d1 as select pg_temp.submit('tap_dedup_1', '{"v": 1}') as id;
select pg_temp.finish((select d1.id from d1));
select is(pg_temp.submit('tap_dedup_1', '{"v": 2}'), (select d1.id from d1), 'by default a completed job still holds its key');

-- scoped by state: {pending, running} frees the key once the job has run
create temp table d2 as select pg_temp.submit('tap_dedup_2', '{"v": 1}', '{pending,running}') as id;
select
    is(
        pg_temp.submit('tap_dedup_2', '{"v": 2}', '{pending,running}'), (select d2.id from d2), 'a pending job holds a scoped key'
    );
select pg_temp.finish((select d2.id from d2));
select isnt(
    pg_temp.submit('tap_dedup_2', '{"v": 3}', '{pending,running}'), (select d2.id from d2),
    'once it has run, the scoped key makes a new job'
);
select is(pg_temp.n_jobs('tap_dedup_2'), 2::bigint, 'two jobs');
select is(
    pg_temp.submit('tap_dedup_2', '{"v": 4}', '{pending,running}'),
    (
        select max(job_id) from jobctl.job
        where tenant_id = 'tap_dedup_2'
    ), 'and the new one holds it (the newest job)'
);

-- scoped by period: one job per key per hour
create temp table d3 as select pg_temp.submit('tap_dedup_3', '{"v": 1}', null, '1 hour') as id;
select is(pg_temp.submit('tap_dedup_3', '{"v": 2}', null, '1 hour'), (select d3.id from d3), 'in the same hour: the holder');
-- the holder made in the hour before (moved back through its partition key)
update jobctl.job set created_at = date_bin('1 hour', now(), timestamptz '2000-01-01') - interval '1 minute'
where job_id = (select d3.id from d3);
select isnt(
    pg_temp.submit('tap_dedup_3', '{"v": 3}', null, '1 hour'), (select d3.id from d3),
    'a job of the hour before does not hold the key this hour'
);
select is(
    pg_temp.submit('tap_dedup_3', '{"v": 4}', null, '1 day'),
    (
        select max(job_id) from jobctl.job
        where tenant_id = 'tap_dedup_3'
    ), 'the period is the caller''s: by day, held'
);

-- debounce: replace moves a pending holder's payload and run_at; preserve_run_at only its payload
create temp table d4 as
select pg_temp.submit('tap_dedup_4', '{"v": 1}', '{pending}', null, 'replace', now() + interval '1 minute') as id;
select is(
    pg_temp.submit('tap_dedup_4', '{"v": 2}', '{pending}', null, 'replace', now() + interval '5 minutes'),
    (select d4.id from d4), 'a repeat returns the holder'
);
select
    is((
        select payload from jobctl.job
        where job_id = (select d4.id from d4)
    ), '{"v": 2}'::jsonb, 'replace: the payload is the repeat''s');
select
    is((
        select run_at from jobctl.job
        where job_id = (select d4.id from d4)
    ), now() + interval '5 minutes', 'replace: so is run_at');
select is(
    (
        select run_at from jobctl._delayed
        where job_id = (select d4.id from d4)
    ), now() + interval '5 minutes',
    'its queue row moved with it'
);
select pg_temp.submit('tap_dedup_4', '{"v": 3}', '{pending}', null, 'preserve_run_at', now() + interval '9 minutes');
select
    is((
        select payload from jobctl.job
        where job_id = (select d4.id from d4)
    ), '{"v": 3}'::jsonb, 'preserve_run_at: the payload is replaced');
select
    is((
        select run_at from jobctl.job
        where job_id = (select d4.id from d4)
    ), now() + interval '5 minutes', 'preserve_run_at: run_at is kept');
select pg_temp.submit('tap_dedup_4', '{"v": 4}', '{pending}', null, 'replace');
select is(pg_temp.queued((select d4.id from d4)), 'ready', 'replace without run_at: due now, in _ready');
select
    is((
        select count(*) from jobctl.recount_counters()
        where tenant_id = 'tap_dedup_4'
    ), 0::bigint, 'the counters follow the moves');
-- a running holder is not pending: a repeat leaves it (and with the default scope, makes no job)
create temp table d5 as select pg_temp.submit('tap_dedup_5', '{"v": 1}', null, null, 'replace') as id;
select is((select count(*) from jobctl.claim_job('tap_dedup_w', array['tap_dedup_5'], 1)), 1::bigint, 'the holder is claimed');
select is(
    pg_temp.submit('tap_dedup_5', '{"v": 2}', null, null, 'replace'), (select d5.id from d5), 'a running holder is returned'
);
select is((
    select payload from jobctl.job
    where job_id = (select d5.id from d5)
), '{"v": 1}'::jsonb, 'unchanged');

-- batches take the same options; in one call the last repeat's payload wins
select is(
    (select count(distinct job_id) from jobctl.submit_jobs('[
        {"tenant_id": "tap_dedup_6", "queue": "tap_dedup_q", "payload": {"v": 1}, "dedup_key": "k", "dedup_states": ["pending"], "dedup_mode": "replace"},
        {"tenant_id": "tap_dedup_6", "queue": "tap_dedup_q", "payload": {"v": 2}, "dedup_key": "k", "dedup_states": ["pending"], "dedup_mode": "replace"},
        {"tenant_id": "tap_dedup_6", "queue": "tap_dedup_q", "payload": {"v": 3}, "dedup_key": "k", "dedup_states": ["pending"], "dedup_mode": "replace"}
    ]')), 1::bigint, 'submit_jobs: three repeats in one call, one job'
);
select is((
    select payload from jobctl.job
    where tenant_id = 'tap_dedup_6'
), '{"v": 3}'::jsonb, 'with the last payload');

-- bounds
select throws_ok(
    $$select jobctl.submit_job('tap_dedup_7', 'q', '{}', dedup_states => '{pending}')$$,
    'JC001', 'dedup_states, dedup_period and dedup_mode need a dedup_key', 'a scope without a key: JC001'
);
select throws_ok(
    $$select jobctl.submit_job('tap_dedup_7', 'q', '{}', dedup_key => 'k', dedup_states => '{done}')$$,
    'JC001',
    'dedup_states must be a non-empty array of job states (waiting, pending, running, failed, completed, dead, cancelled)',
    'an unknown state: JC001'
);
select throws_ok(
    $$select jobctl.submit_job('tap_dedup_7', 'q', '{}', dedup_key => 'k', dedup_period => '0.5 seconds')$$,
    'JC001', 'dedup_period must be from 1 second to 366 days', 'a period under a second: JC001'
);
select throws_ok(
    $$select jobctl.submit_job('tap_dedup_7', 'q', '{}', dedup_key => 'k', dedup_mode => 'merge')$$,
    'JC001', 'dedup_mode must be keep, replace or preserve_run_at, not merge', 'an unknown mode: JC001'
);
select throws_ok(
    $$select jobctl.submit_jobs('[{"tenant_id": "tap_dedup_7", "queue": "q", "payload": {}, "dedup_key": "k",
        "dedup_states": "pending"}]')$$,
    'JC001', 'jobs[0].dedup_states must be an array of at most 100 strings', 'submit_jobs: dedup_states an array: JC001'
);

select * from finish();
rollback;
