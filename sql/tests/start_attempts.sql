-- jobctl._start_attempts: the "start" step of claim_job: jobs whose _ready rows the caller deleted
-- become running, attempt + 1, a new lease epoch greater than any before, a lease row in _running.
-- Tenant tap_start_t, queue tap_start_q.
begin;
select plan(7);
set local jit = off;
\ir helpers.psql

select has_function(
    'jobctl', '_start_attempts', array['bigint[]', 'timestamp with time zone[]', 'text', 'timestamp with time zone', 'interval'],
    '_start_attempts exists'
);

create temp table s as
select x.job_id from generate_series(1, 2) as g (g)
cross join lateral jobctl.submit_job('tap_start_t', 'tap_start_q', jsonb_build_object('k', g.g)) as x;
create temp table t as
select x.* from jobctl._take('{tap_start_q}', '{tap_start_t}', row('{1}', '{2}', '{2}', false)::jobctl._picks) as x;
create temp table epoch_before as select last_value as e from jobctl.lease_epoch_seq;
create temp table started as
select a.* from t cross join jobctl._start_attempts(t.ids, t.cas, 'tap_start_w', now(), '40 seconds') as a;

select set_eq($$select job_id from started$$, $$select job_id from s$$, 'both jobs start');
select is(
    (
        select count(*)::integer
        from started
        where
            attempt = 1 and payload ? 'k' and tenant_id = 'tap_start_t'
            and lease_expires_at = now() + interval '40 seconds'
    ),
    2, 'attempt 1, the payload, the lease from p_now'
);
select ok(
    (select min(lease_epoch) from started) > (select e from epoch_before),
    'each lease epoch is greater than any before'
);
select is(
    (select count(distinct lease_epoch)::integer from started), 2, 'one epoch a job'
);
select set_eq(
    $$select r.job_id, r.lease_epoch, r.worker_id from jobctl._running as r where r.tenant_id = 'tap_start_t'$$,
    $$select job_id, lease_epoch, 'tap_start_w' from started$$,
    'their leases are in _running'
);
select is(
    (
        select count(*)::integer from jobctl.job as j inner join started on j.job_id = started.job_id
        where j.state = 'running' and j.worker_id = 'tap_start_w' and j.started_at = now()
    ),
    2, 'the job rows say running, by whom, since when'
);

select * from finish();
rollback;
