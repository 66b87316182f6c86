-- jobctl.claim_job: argument errors, what a claim returns and writes, priority order, queue filter,
-- delayed jobs, paused tenants, max_running, sharing across tenants, lease epochs.
-- Tenants tap_claim_*, queues tap_claim_*; every claim names its queues.
begin;
select plan(58);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;
\ir helpers.psql

select has_function(
    'jobctl', 'claim_job', array['text', 'text[]', 'integer', 'interval', 'boolean'],
    'claim_job(worker_id, queues, max_jobs, lease, flush) exists'
);

-- every claim of this file, in order, tagged; t0/t1 bracket the call
create temp table c (
    seq serial,
    tag text,
    job_id bigint,
    tenant_id text,
    queue text,
    payload jsonb,
    priority integer,
    attempt integer,
    max_attempts integer,
    lease_epoch bigint,
    lease_expires_at timestamptz,
    timeout interval,
    traceparent text,
    t0 timestamptz,
    t1 timestamptz
);

create function pg_temp.claim(
    p_tag text, p_queues text[], p_max integer default 1, p_lease interval default '30 seconds'
)
returns bigint
language plpgsql as $$
declare
    v_t0 timestamptz := clock_timestamp();
    v_n bigint;
begin
    insert into c (
        tag, job_id, tenant_id, queue, payload, priority, attempt, max_attempts, lease_epoch, lease_expires_at,
        timeout, traceparent, t0, t1
    )
    select p_tag, x.*, v_t0, clock_timestamp()
    from jobctl.claim_job('tap_claim_w', p_queues, p_max, p_lease) as x;
    get diagnostics v_n = row_count;
    return v_n;
end
$$;

create function pg_temp.claimed(p_tag text) returns setof c
language sql as $$
    select * from c where tag = p_tag order by seq
$$;

-- argument errors
select throws_ok(
    $$select jobctl.claim_job(null, array['tap_claim_q1'])$$,
    'JC001', 'worker_id must be a non-empty string of at most 200 characters', 'NULL worker_id: JC001'
);
select throws_ok(
    $$select jobctl.claim_job('', array['tap_claim_q1'])$$,
    'JC001', 'worker_id must be a non-empty string of at most 200 characters', 'empty worker_id: JC001'
);
select throws_ok(
    $$select jobctl.claim_job(repeat('w', 201), array['tap_claim_q1'])$$,
    'JC001', 'worker_id must be a non-empty string of at most 200 characters', 'worker_id over 200 characters: JC001'
);
select throws_ok(
    $$select jobctl.claim_job('tap_claim_w', array['tap_claim_q1'], max_jobs => 0)$$,
    'JC001', 'max_jobs must be from 1 to 1000, not 0', 'max_jobs 0: JC001'
);
select throws_ok(
    $$select jobctl.claim_job('tap_claim_w', array['tap_claim_q1'], max_jobs => 1001)$$,
    'JC001', 'max_jobs must be from 1 to 1000, not 1001', 'max_jobs 1001: JC001'
);
select throws_ok(
    $$select jobctl.claim_job('tap_claim_w', array['tap_claim_q1'], max_jobs => null)$$,
    'JC001', 'max_jobs must be from 1 to 1000, not NULL', 'max_jobs NULL: JC001'
);
select throws_ok(
    $$select jobctl.claim_job('tap_claim_w', array['tap_claim_q1'], lease => '0 seconds')$$,
    'JC001', 'lease must be positive and at most 1 day', 'lease 0: JC001'
);
select throws_ok(
    $$select jobctl.claim_job('tap_claim_w', array['tap_claim_q1'], lease => '-5 seconds')$$,
    'JC001', 'lease must be positive and at most 1 day', 'negative lease: JC001'
);
select throws_ok(
    $$select jobctl.claim_job('tap_claim_w', array['tap_claim_q1'], lease => '25 hours')$$,
    'JC001', 'lease must be positive and at most 1 day', 'lease over a day: JC001'
);
select throws_ok(
    $$select jobctl.claim_job('tap_claim_w', array['tap_claim_q1'], lease => null)$$,
    'JC001', 'lease must be positive and at most 1 day', 'lease NULL: JC001'
);
select throws_ok(
    $$select jobctl.claim_job('tap_claim_w', array['tap_claim_q1', null])$$,
    'JC001', 'queues must not contain NULL', 'a NULL queue name: JC001'
);
select lives_ok(
    $$select jobctl.claim_job('tap_claim_w', array['tap_claim_empty'], max_jobs => 1000, lease => '1 day')$$,
    'max_jobs 1000 and a lease of 1 day are accepted'
);
select is_empty(
    $$select * from jobctl.claim_job('tap_claim_w', array['tap_claim_empty'])$$,
    'a queue without jobs: no row'
);

-- one claim: what it returns and writes
create temp table s1 as
select * from jobctl.submit_job(
    'tap_claim_t1', 'tap_claim_q1', '{"a": 1}', priority => 3, max_attempts => 4, timeout => '45 seconds'
);
select is(pg_temp.claim('one', array['tap_claim_q1'], 1, '20 seconds'), 1::bigint, 'a due job is claimed');
select results_eq(
    $$select job_id, tenant_id, queue, payload, priority, attempt, max_attempts, timeout from pg_temp.claimed('one')$$,
    $$select job_id, 'tap_claim_t1', 'tap_claim_q1', '{"a": 1}'::jsonb, 3, 1, 4, '45 seconds'::interval from s1$$,
    'the claim returns the job with attempt 1, its max_attempts and its timeout'
);
select ok(
    (
        select lease_expires_at between t0 + interval '20 seconds' and t1 + interval '20 seconds'
        from pg_temp.claimed('one')
    ),
    'lease_expires_at = claim time + lease'
);
select results_eq(
    $$select j.state, j.attempt, j.worker_id, j.lease_epoch, j.started_at is not null
      from jobctl.job as j where j.job_id = (select job_id from s1)$$,
    $$select 'running', 1, 'tap_claim_w', lease_epoch, true from pg_temp.claimed('one')$$,
    'the job is running, attempt 1, with the worker and the returned lease_epoch'
);
select results_eq(
    $$select r.lease_epoch, r.worker_id, r.attempt, r.lease_expires_at, r.deadline - r.started_at
      from jobctl._running as r where r.job_id = (select job_id from s1)$$,
    $$select lease_epoch, 'tap_claim_w', 1, lease_expires_at, interval '45 seconds' from pg_temp.claimed('one')$$,
    'jobctl._running holds the lease, and the deadline is start + timeout'
);
select is_empty($$select 1 from jobctl._ready where job_id = (select job_id from s1)$$, 'the job left jobctl._ready');
select is(pg_temp.claim('again', array['tap_claim_q1'], 10), 0::bigint, 'a claimed job is not handed out again');

-- priority order within a tenant's queue: higher first, then earlier run_at, then lower id
do $do$
begin
    perform jobctl.submit_jobs($$[
        {"tenant_id": "tap_claim_t2", "queue": "tap_claim_prio", "payload": {"n": "p0"}},
        {"tenant_id": "tap_claim_t2", "queue": "tap_claim_prio", "payload": {"n": "p5a"}, "priority": 5},
        {"tenant_id": "tap_claim_t2", "queue": "tap_claim_prio", "payload": {"n": "p-3"}, "priority": -3},
        {"tenant_id": "tap_claim_t2", "queue": "tap_claim_prio", "payload": {"n": "p10"}, "priority": 10},
        {"tenant_id": "tap_claim_t2", "queue": "tap_claim_prio", "payload": {"n": "p5b"}, "priority": 5},
        {"tenant_id": "tap_claim_t2", "queue": "tap_claim_prio", "payload": {"n": "p0-early"},
         "run_at": "2000-01-01T00:00:00Z"}
    ]$$);
    perform pg_temp.claim('prio', array['tap_claim_prio']) from generate_series(1, 6);
    perform jobctl.submit_jobs($$[
        {"tenant_id": "tap_claim_t2", "queue": "tap_claim_prio2", "payload": {"n": 1}, "priority": 1},
        {"tenant_id": "tap_claim_t2", "queue": "tap_claim_prio2", "payload": {"n": 2}, "priority": 2},
        {"tenant_id": "tap_claim_t2", "queue": "tap_claim_prio2", "payload": {"n": 3}, "priority": 3},
        {"tenant_id": "tap_claim_t2", "queue": "tap_claim_prio2", "payload": {"n": 4}, "priority": 4},
        {"tenant_id": "tap_claim_t2", "queue": "tap_claim_prio2", "payload": {"n": 5}, "priority": 5}
    ]$$);
end
$do$;
select is(
    array(select payload ->> 'n' from pg_temp.claimed('prio')),
    array['p10', 'p5a', 'p5b', 'p0-early', 'p0', 'p-3'],
    'one at a time: priority descending, then earlier run_at, then lower id'
);
select is(pg_temp.claim('batch', array['tap_claim_prio2'], 3), 3::bigint, 'max_jobs 3 of 5: three jobs');
select is(
    (select array_agg((payload ->> 'n')::integer order by (payload ->> 'n')::integer) from pg_temp.claimed('batch')),
    array[3, 4, 5],
    'a batch takes the highest priorities'
);

-- queue filter
do $do$
begin
    perform jobctl.submit_job('tap_claim_t3', 'tap_claim_qa', '{}');
    perform jobctl.submit_job('tap_claim_t3', 'tap_claim_qb', '{}');
    perform jobctl.submit_job('tap_claim_t3', 'tap_claim_qc', '{}');
end
$do$;
select is(pg_temp.claim('qa', array['tap_claim_qa'], 10), 1::bigint, 'queues [qa]: one job');
select is((select queue from pg_temp.claimed('qa')), 'tap_claim_qa', 'and it is from qa');
select is(pg_temp.claim('qbc', array['tap_claim_qb', 'tap_claim_qc'], 10), 2::bigint, 'queues [qb, qc]: two jobs');
select is(
    (select array_agg(queue order by queue) from pg_temp.claimed('qbc')), array['tap_claim_qb', 'tap_claim_qc'],
    'one from each listed queue'
);

-- claim_job reads the lanes (queue, tenant) with due work from a shared list that may be up to
-- about 100 ms old (jobctl._lanes); after a change to what is claimable, wait that out
create function pg_temp.settle() returns void
language sql as $$
    select pg_sleep(0.15)
$$;

-- delayed jobs are not claimable until due
create temp table s_delayed as
select * from jobctl.submit_job('tap_claim_t4', 'tap_claim_dq', '{}', run_at => now() + interval '1 hour');
select is(pg_temp.claim('early', array['tap_claim_dq'], 10), 0::bigint, 'a job due in an hour is not claimed');
select pg_temp.make_due(job_id) from s_delayed;
select is(
    pg_temp.claim('due_at_once', array['tap_claim_dq'], 10), 1::bigint,
    'once its run_at has passed it is claimed, even right after an empty claim of the queue'
);
select pg_temp.settle();
select pg_temp.claim('due', array['tap_claim_dq'], 10) as claimed_after_settling;
select is(
    (
        select array_agg(x.job_id)
        from (
            select * from pg_temp.claimed('due_at_once')
            union all
            select * from pg_temp.claimed('due')
        ) as x
    ),
    (select array[job_id] from s_delayed),
    'once its run_at has passed it is claimed (once)'
);
select is_empty(
    $$select 1 from jobctl._delayed where job_id = (select job_id from s_delayed)$$,
    'and it left jobctl._delayed'
);

-- paused tenants are skipped
create temp table s_paused as
select * from jobctl.submit_job('tap_claim_paused', 'tap_claim_pq', '{}');
update jobctl.tenant set paused = true
where tenant_id = 'tap_claim_paused';
select is(pg_temp.claim('paused', array['tap_claim_pq'], 10), 0::bigint, 'a paused tenant''s job is not claimed');
update jobctl.tenant set paused = false
where tenant_id = 'tap_claim_paused';
select pg_temp.settle();
select is(pg_temp.claim('unpaused', array['tap_claim_pq'], 10), 1::bigint, 'it is claimed once the tenant resumes');

-- max_running
do $do$
begin
    perform jobctl.put_tenant('tap_claim_lim', max_running => 2);
    perform jobctl.submit_job('tap_claim_lim', 'tap_claim_lq', '{}') from generate_series(1, 5);
    perform jobctl.put_tenant('tap_claim_zero', max_running => 0);
    perform jobctl.submit_job('tap_claim_zero', 'tap_claim_zq', '{}');
end
$do$;
select is(pg_temp.claim('lim1', array['tap_claim_lq'], 5), 2::bigint, 'max_running 2, 5 due, max_jobs 5: two jobs');
select is(pg_temp.claim('lim2', array['tap_claim_lq'], 5), 0::bigint, 'none while two are running');
select ok(
    (
        select jobctl.complete_job(job_id, lease_epoch) from pg_temp.claimed('lim1')
        order by seq
        limit 1
    ),
    'one of them completes'
);
select is(pg_temp.claim('lim3', array['tap_claim_lq'], 5), 1::bigint, 'then exactly one more can be claimed');
select is(pg_temp.claim('zero', array['tap_claim_zq'], 5), 0::bigint, 'max_running 0: nothing is claimed');

-- sharing across tenants of equal weight
do $do$
begin
    perform jobctl.submit_job('tap_claim_f' || t, 'tap_claim_fq', jsonb_build_object('i', i))
    from generate_series(1, 3) as t cross join generate_series(1, 30) as i;
end
$do$;
select is(pg_temp.claim('fair', array['tap_claim_fq'], 30), 30::bigint, 'three tenants with 30 jobs each: 30 claimed');
select is(
    (select count(distinct tenant_id) from pg_temp.claimed('fair')), 3::bigint,
    'a claim of 30 takes from all three tenants'
);

-- re-claims get a higher lease_epoch and the next attempt
create temp table s_re as
select * from jobctl.submit_job(
    'tap_claim_t5', 'tap_claim_rq', '{}', backoff => '{"strategy": "fixed", "base": "0 seconds", "jitter": false}'
);
select is(pg_temp.claim('re1', array['tap_claim_rq']), 1::bigint, 'a job with a zero backoff is claimed');
select is(
    (select jobctl.fail_job(job_id, lease_epoch, 'boom') from pg_temp.claimed('re1')), 'failed',
    'the first attempt fails (backoff 0: due at once)'
);
select is(pg_temp.claim('re2', array['tap_claim_rq']), 1::bigint, 'a failed, due job is claimed again');
select ok(
    (
        select b.lease_epoch > a.lease_epoch and b.attempt = 2 and b.job_id = a.job_id
        from pg_temp.claimed('re1') as a cross join pg_temp.claimed('re2') as b
    ),
    'the same job, with a strictly greater lease_epoch and attempt 2'
);
select ok(
    (select min(f.lease_epoch) from pg_temp.claimed('fair') as f) > (select o.lease_epoch from pg_temp.claimed('one') as o),
    'later claims always carry greater epochs than earlier ones'
);


-- a tenant at its max_running does not make claims come back empty while others have work
do $do$
begin
    perform jobctl.put_tenant('tap_claim_full', weight => 10000, max_running => 1);
    perform jobctl.submit_job('tap_claim_full', 'tap_claim_fullq', '{}') from generate_series(1, 3);
    perform jobctl.submit_job('tap_claim_other', 'tap_claim_fullq', '{}') from generate_series(1, 3);
end
$do$;
select pg_temp.claim('full0', array['tap_claim_fullq'], 1);
select is(
    (
        select count(*) from c
        where tag = 'full0' and tenant_id = 'tap_claim_full'
    ), 1::bigint,
    'the heavy limited tenant gets the first claim'
);
select is(
    pg_temp.claim('full1', array['tap_claim_fullq'], 3), 3::bigint,
    'with that tenant full, a claim of 3 takes the other tenant''s 3 jobs'
);
select is(
    (
        select count(*) from c
        where tag = 'full1' and tenant_id = 'tap_claim_other'
    ), 3::bigint,
    'all of them from the other tenant'
);

-- shares go by tenant, not by queue: 4 queues of one tenant against 1 of another, equal weights
do $do$
begin
    perform jobctl.submit_job('tap_claim_wide', 'tap_claim_w' || (i % 4), '{}') from generate_series(1, 40) as i;
    perform jobctl.submit_job('tap_claim_narrow', 'tap_claim_w0', '{}') from generate_series(1, 40);
end
$do$;
select pg_temp.claim('wide', array['tap_claim_w0', 'tap_claim_w1', 'tap_claim_w2', 'tap_claim_w3'], 20);
select ok(
    (
        select count(*) from c
        where tag = 'wide' and tenant_id = 'tap_claim_narrow'
    ) between 9 and 11,
    'a tenant with one queue gets half of a 20-job claim against a tenant with four (systematic shares: 10 +- 1)'
);

-- a worker with many queues claims (the lane cache keys its filter by a hash: a probe found 300
-- names of 32 characters making an index entry too big on every claim), within the filter's bound
select lives_ok(
    $$select * from jobctl.claim_job('tap_claim_many', array(select repeat('q', 28) || lpad(g::text, 4, '0')
                                     from generate_series(1, 300) as g))$$,
    'a claim with 300 queues of 32 characters runs'
);
select throws_ok(
    $$select * from jobctl.claim_job('tap_claim_many', array(select 'q' || g from generate_series(1, 1001) as g))$$,
    'JC001', 'queues must hold at most 1000 names of at most 200 characters', 'a filter of 1,001 queues: JC001'
);

-- fencing across a crash: an emptied guard (what crash recovery, a restored backup
-- or a promotion leaves) makes the next claim that gets a job move the epochs 2^40 on, once
truncate jobctl._epoch_guard;
create temp table epoch_before as select max(lease_epoch) as e from jobctl.job;
do $do$
begin
    perform jobctl.submit_job('tap_claim_epoch', 'tap_claim_epoch', '{}') from generate_series(1, 2);
end
$do$;
create temp table raised as
select lease_epoch from jobctl.claim_job('tap_claim_e1', array['tap_claim_epoch'], 1, flush => false);
select cmp_ok(
    (select lease_epoch from raised), '>', (select e + 1099511627776 from epoch_before),
    'after the guard was emptied, the first epoch handed out is over 2^40 above every earlier one'
);
select is(
    (select count(*) from jobctl._epoch_guard), 1::bigint, 'the raise leaves one row in the guard'
);
select is(
    current_setting('synchronous_commit'), 'on',
    'a claim that raised the epochs commits flushed, though it asked for flush => false'
);
select is(
    (select lease_epoch from jobctl.claim_job('tap_claim_e2', array['tap_claim_epoch'], 1, flush => false))
    - (select lease_epoch from raised),
    1::bigint,
    'the next claim does not raise them again'
);
select is(
    current_setting('synchronous_commit'), 'off',
    'claim_job(flush => false): the rest of the transaction commits without waiting for its flush'
);
set local synchronous_commit = on;

select isnt(
    obj_description('jobctl.claim_job(text, text[], integer, interval, boolean)'::regprocedure), null,
    'claim_job has a comment'
);

select * from finish();
rollback;
