-- jobctl.reap_expired_leases: expired leases -> failed (due at once) or dead; jobs past their
-- timeout -> failed after their backoff, even with a current lease. Tenant tap_reap_t, queues tap_reap_*.
-- The reaper is global: it also reaps other sessions' expired leases, so counts are lower bounds.
begin;
select plan(32);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;
\ir helpers.psql

select has_function('jobctl', 'reap_expired_leases', array[]::text[], 'reap_expired_leases() exists');
select function_returns('jobctl', 'reap_expired_leases', array[]::text[], 'integer', 'it returns integer');

-- the reaper runs alone (a try-lock); wait for pg_cron's ticker to finish its pass and keep it out
-- of this transaction, so the calls below do the work (the lock is re-entrant for this session)
-- wait for any other reaper (pg_cron's tick) to finish and keep it out of this transaction
select name from jobctl._lock
where name = 'reap' and bucket = 0 for update;

-- claim one job of each queue; each scenario has its own queue
do $do$
begin
    perform jobctl.submit_job(
        'tap_reap_t', 'tap_reap_' || q, jsonb_build_object('q', q),
        max_attempts => case when q in ('dead', 'tdead') then 1 else 3 end,
        timeout => case when q in ('timeout', 'tdead') then interval '1 hour' end,
        backoff => '{"strategy": "fixed", "base": "10 seconds", "jitter": false}'
    )
    from unnest(array['expired', 'dead', 'current', 'timeout', 'tdead']) as q;
end
$do$;
create temp table c as
select
    x.*,
    x.payload ->> 'q' as q
from unnest(array['expired', 'dead', 'current', 'timeout', 'tdead']) as q
cross join lateral jobctl.claim_job('tap_reap_w', array['tap_reap_' || q.q]) as x;
select is((select count(*) from c), 5::bigint, 'five jobs are running');
create function pg_temp.c(p_q text) returns setof c
language sql as $$
    select * from c where q = p_q
$$;

-- move time: two leases expired, two jobs past their deadline (leases current)
update jobctl._running as r set lease_expires_at = now() - interval '1 second'
from c
where r.job_id = c.job_id and c.q in ('expired', 'dead');
update jobctl._running as r set deadline = now() - interval '1 second'
from c
where r.job_id = c.job_id and c.q in ('timeout', 'tdead');

create temp table reaped as
select jobctl.reap_expired_leases() as n;
select cmp_ok((select n from reaped), '>=', 4, 'the four ended attempts are counted');

-- lease expired, attempts left: failed and due at once
select results_eq(
    $$select j.state, j.attempt, j.finished_at, j.last_error
      from c cross join pg_temp.job(c.job_id) as j where c.q = 'expired'$$,
    $$values ('failed', 1, null::timestamptz, 'lease expired: the worker stopped heartbeating')$$,
    'an expired lease with attempts left: failed, with the reason in last_error'
);
select results_eq(
    $$select j.run_at - e.at from c cross join pg_temp.job(c.job_id) as j
      inner join jobctl._event as e on e.job_id = c.job_id and e.event = 'failed' where c.q = 'expired'$$,
    $$values ('0 seconds'::interval)$$,
    'due at the reap: no backoff'
);
select results_eq(
    $$select r.run_at from c inner join jobctl._ready as r on c.job_id = r.job_id where c.q = 'expired'$$,
    $$select j.run_at from c cross join pg_temp.job(c.job_id) as j where c.q = 'expired'$$,
    'it is in jobctl._ready'
);
select is_empty(
    $$select 1 from c inner join jobctl._running as r on c.job_id = r.job_id where c.q = 'expired'$$,
    'its lease is gone from jobctl._running'
);
select is(
    (select jobctl.heartbeat(c.job_id, c.lease_epoch) from pg_temp.c('expired') as c), 'lost',
    'the revoked epoch''s heartbeat: lost'
);
select is(
    (select jobctl.complete_job(c.job_id, c.lease_epoch) from pg_temp.c('expired') as c), false,
    'the revoked epoch cannot complete'
);
select is(
    (select jobctl.fail_job(c.job_id, c.lease_epoch, 'late') from pg_temp.c('expired') as c), null,
    'nor fail'
);
select results_eq(
    $$select h.event, h.attempt, h.lease_epoch, h.worker_id, h.detail
      from c cross join jobctl.job_history(c.job_id) as h where c.q = 'expired'$$,
    $$select 'submitted', 0, null::bigint, null::text, null::text
      union all select 'claimed', 1, c.lease_epoch, 'tap_reap_w', null from c where c.q = 'expired'
      union all select 'failed', 1, c.lease_epoch, 'tap_reap_w', 'lease expired: the worker stopped heartbeating'
        from c where c.q = 'expired'$$,
    'history: submitted, claimed, failed by the reaper'
);

-- the reaped job is claimable again, with a higher epoch and the next attempt
create temp table c2 as
select * from jobctl.claim_job('tap_reap_w2', array['tap_reap_expired']);
select results_eq(
    $$select c2.job_id, c2.attempt, c2.lease_epoch > c.lease_epoch from c2 cross join c where c.q = 'expired'$$,
    $$select c.job_id, 2, true from c where c.q = 'expired'$$,
    'the reaped job is claimed again: attempt 2, a greater lease_epoch'
);
select ok((select jobctl.complete_job(job_id, lease_epoch) from c2), 'and completes under the new epoch');

-- lease expired, no attempts left: dead
select results_eq(
    $$select j.state, j.finished_at is not null, j.last_error from c cross join pg_temp.job(c.job_id) as j where c.q = 'dead'$$,
    $$values ('dead', true, 'lease expired: the worker stopped heartbeating')$$,
    'an expired lease on the last attempt: dead'
);
select is_empty(
    $$select 1 from c inner join jobctl._ready as r on c.job_id = r.job_id where c.q = 'dead'
      union all select 1 from c inner join jobctl._delayed as d on c.job_id = d.job_id where c.q = 'dead'
      union all select 1 from c inner join jobctl._running as r on c.job_id = r.job_id where c.q = 'dead'$$,
    'a dead job is in no queue'
);

-- a current lease is left alone
select results_eq(
    $$select j.state, r.lease_epoch from c cross join pg_temp.job(c.job_id) as j
      inner join jobctl._running as r on c.job_id = r.job_id where c.q = 'current'$$,
    $$select 'running', c.lease_epoch from c where c.q = 'current'$$,
    'a job with a current lease keeps running'
);
select is(
    (select jobctl.heartbeat(c.job_id, c.lease_epoch) from pg_temp.c('current') as c), 'ok', 'its heartbeat: ok'
);

-- past its timeout, lease current: failed after its backoff
select results_eq(
    $$select j.state, j.last_error from c cross join pg_temp.job(c.job_id) as j where c.q = 'timeout'$$,
    $$values ('failed', 'timed out: ran past its timeout')$$,
    'a job past its deadline is failed although its lease is current'
);
select results_eq(
    $$select j.run_at - e.at from c cross join pg_temp.job(c.job_id) as j
      inner join jobctl._event as e on e.job_id = c.job_id and e.event = 'failed' where c.q = 'timeout'$$,
    $$values ('10 seconds'::interval)$$,
    'a timed-out job waits its backoff (fixed 10 s)'
);
select results_eq(
    $$select d.run_at from c inner join jobctl._delayed as d on c.job_id = d.job_id where c.q = 'timeout'$$,
    $$select j.run_at from c cross join pg_temp.job(c.job_id) as j where c.q = 'timeout'$$,
    'in jobctl._delayed'
);
select is(
    (select jobctl.heartbeat(c.job_id, c.lease_epoch) from pg_temp.c('timeout') as c), 'lost',
    'the timed-out worker''s heartbeat: lost'
);
select results_eq(
    $$select j.state, j.last_error from c cross join pg_temp.job(c.job_id) as j where c.q = 'tdead'$$,
    $$values ('dead', 'timed out: ran past its timeout')$$,
    'past its timeout on the last attempt: dead'
);

-- a second pass finds nothing more of ours
create temp table before_second as
select
    j.job_id,
    j.state,
    j.run_at
from c cross join pg_temp.job(c.job_id) as j;
select cmp_ok(jobctl.reap_expired_leases(), '>=', 0, 'a second pass runs');
select results_eq(
    $$select j.job_id, j.state, j.run_at from c cross join pg_temp.job(c.job_id) as j order by 1$$,
    $$select job_id, state, run_at from before_second order by 1$$,
    'and changes none of these jobs'
);

-- no lease, no deadline: a timeout-less job is never timed out
select is(
    (select r.deadline from pg_temp.c('current') as c inner join jobctl._running as r on c.job_id = r.job_id), null,
    'a job without a timeout has no deadline'
);

-- a reaped job whose lease expired again on a later attempt: attempts add up to dead
create temp table s3 as
select * from jobctl.submit_job('tap_reap_t', 'tap_reap_twice', '{}', max_attempts => 2);
create temp table c3a as
select * from jobctl.claim_job('tap_reap_w', array['tap_reap_twice']);
update jobctl._running set lease_expires_at = now() - interval '1 second'
where job_id = (select job_id from s3);
select cmp_ok(jobctl.reap_expired_leases(), '>=', 1, 'attempt 1 expires and is reaped');
create temp table c3b as
select * from jobctl.claim_job('tap_reap_w', array['tap_reap_twice']);
select is((select attempt from c3b), 2, 'attempt 2 is claimed');
update jobctl._running set lease_expires_at = now() - interval '1 second'
where job_id = (select job_id from s3);
select cmp_ok(jobctl.reap_expired_leases(), '>=', 1, 'attempt 2 expires and is reaped');
select results_eq(
    $$select j.state, j.attempt from s3 cross join pg_temp.job(s3.job_id) as j$$,
    $$values ('dead', 2)$$,
    'after max_attempts expired leases the job is dead'
);
select results_eq(
    $$select h.event, h.attempt from s3 cross join jobctl.job_history(s3.job_id) as h$$,
    $$values ('submitted', 0), ('claimed', 1), ('failed', 1), ('claimed', 2), ('dead', 2)$$,
    'history: both attempts and their ends'
);

select isnt(
    obj_description('jobctl.reap_expired_leases()'::regprocedure), null, 'reap_expired_leases has a comment'
);

select * from finish();
rollback;
