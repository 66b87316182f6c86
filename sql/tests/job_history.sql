-- jobctl.job_history: every transition of a job, oldest first, starting with submitted; each with
-- its attempt, lease epoch and worker. Tenant tap_hist_t, queues tap_hist_*.
begin;
select plan(22);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;

select has_function('jobctl', 'job_history', array['bigint'], 'job_history(job_id) exists');

select is_empty($$select * from jobctl.job_history(-1)$$, 'an unknown id: zero rows');

-- history is ordered by time: each row's at is not before the previous one's
create function pg_temp.in_order(p_job_id bigint) returns boolean
language sql as $$
    select coalesce(bool_and(h.at >= h.prev), true)
    from (
        select
            x.at,
            lag(x.at) over (order by x.ordinality) as prev
        from jobctl.job_history(p_job_id) with ordinality as x
    ) as h
$$;

-- just submitted
create temp table s1 as
select * from jobctl.submit_job('tap_hist_t', 'tap_hist_q1', '{}');
select results_eq(
    $$select h.at, h.event, h.attempt, h.lease_epoch, h.worker_id, h.detail
      from s1 cross join jobctl.job_history(s1.job_id) as h$$,
    $$values (now(), 'submitted', 0, null::bigint, null::text, null::text)$$,
    'a new job: one submitted event at its creation time'
);

-- a full life: claimed, failed, claimed again by another worker, completed
create temp table s2 as
select * from jobctl.submit_job(
    'tap_hist_t', 'tap_hist_q2', '{}', backoff => '{"strategy": "fixed", "base": "0 seconds", "jitter": false}'
);
create temp table c2a as
select * from jobctl.claim_job('tap_hist_w1', array['tap_hist_q2']);
select is((select jobctl.fail_job(job_id, lease_epoch, 'boom') from c2a), 'failed', 'attempt 1 fails');
create temp table c2b as
select * from jobctl.claim_job('tap_hist_w2', array['tap_hist_q2']);
select results_eq(
    $$select h.event, h.attempt, h.lease_epoch, h.worker_id, h.detail from s2 cross join jobctl.job_history(s2.job_id) as h$$,
    $$select 'submitted', 0, null::bigint, null::text, null::text
      union all select 'claimed', 1, lease_epoch, 'tap_hist_w1', null from c2a
      union all select 'failed', 1, lease_epoch, 'tap_hist_w1', 'boom' from c2a
      union all select 'claimed', 2, lease_epoch, 'tap_hist_w2', null from c2b$$,
    'while attempt 2 runs: submitted, claimed, failed, claimed'
);
select ok((select jobctl.complete_job(job_id, lease_epoch, '{}') from c2b), 'attempt 2 completes');
select results_eq(
    $$select h.event, h.attempt, h.lease_epoch, h.worker_id from s2 cross join jobctl.job_history(s2.job_id) as h$$,
    $$select 'submitted', 0, null::bigint, null::text
      union all select 'claimed', 1, lease_epoch, 'tap_hist_w1' from c2a
      union all select 'failed', 1, lease_epoch, 'tap_hist_w1' from c2a
      union all select 'claimed', 2, lease_epoch, 'tap_hist_w2' from c2b
      union all select 'completed', 2, lease_epoch, 'tap_hist_w2' from c2b$$,
    'after completion: submitted, claimed, failed, claimed, completed'
);
select results_eq(
    $$select h.at from s2 cross join jobctl.job_history(s2.job_id) as h where h.event = 'claimed' order by h.attempt$$,
    $$select lease_expires_at - interval '30 seconds' from c2a
      union all select lease_expires_at - interval '30 seconds' from c2b$$,
    'each claimed event is at its claim time'
);
select results_eq(
    $$select h.at from s2 cross join jobctl.job_history(s2.job_id) as h where h.event = 'completed'$$,
    $$select j.finished_at from s2 cross join jobctl.get_job(s2.job_id) as j$$,
    'the completed event is at the finish time'
);
select ok((select pg_temp.in_order(job_id) from s2), 'oldest first');

-- dead
create temp table s3 as
select * from jobctl.submit_job('tap_hist_t', 'tap_hist_q3', '{}', max_attempts => 1);
create temp table c3 as
select * from jobctl.claim_job('tap_hist_w1', array['tap_hist_q3']);
select is((select jobctl.fail_job(job_id, lease_epoch, 'fatal', false) from c3), 'dead', 'a job dies');
select results_eq(
    $$select h.event, h.attempt, h.detail from s3 cross join jobctl.job_history(s3.job_id) as h$$,
    $$values ('submitted', 0, null::text), ('claimed', 1, null), ('dead', 1, 'fatal')$$,
    'dead: submitted, claimed, dead with the error'
);

-- cancelled before it ran, then retried, then claimed
create temp table s4 as
select * from jobctl.submit_job('tap_hist_t', 'tap_hist_q4', '{}');
select is((select jobctl.cancel_job(job_id) from s4), 'cancelled', 'a pending job is cancelled');
select is((select jobctl.retry_job(job_id) from s4), 'pending', 'and retried');
create temp table c4 as
select * from jobctl.claim_job('tap_hist_w1', array['tap_hist_q4']);
select results_eq(
    $$select h.event, h.attempt, h.detail from s4 cross join jobctl.job_history(s4.job_id) as h$$,
    $$values ('submitted', 0, null::text), ('cancelled', 0, 'cancelled: on request'),
        ('retried', 0, 'manual retry of a cancelled job'),
        ('claimed', 1, null)$$,
    'submitted, cancelled, retried, claimed'
);
select ok((select pg_temp.in_order(job_id) from s4), 'oldest first');

-- released by a worker shutting down, claimed again by another, completed
create temp table s5 as
select * from jobctl.submit_job('tap_hist_t', 'tap_hist_q5', '{}');
create temp table c5a as
select * from jobctl.claim_job('tap_hist_w1', array['tap_hist_q5']);
select ok((select jobctl.release_job(job_id, lease_epoch) from c5a), 'attempt 1 is released');
select results_eq(
    $$select h.event, h.attempt, h.lease_epoch, h.worker_id, h.detail from s5 cross join jobctl.job_history(s5.job_id) as h$$,
    $$select 'submitted', 0, null::bigint, null::text, null::text
      union all select 'claimed', 1, lease_epoch, 'tap_hist_w1', null from c5a
      union all select 'released', 1, lease_epoch, 'tap_hist_w1', null from c5a$$,
    'after a release: submitted, claimed, released (with the attempt, epoch and worker)'
);
create temp table c5b as
select * from jobctl.claim_job('tap_hist_w2', array['tap_hist_q5']);
select ok((select jobctl.complete_job(job_id, lease_epoch) from c5b), 'the job is claimed again and completes');
select results_eq(
    $$select h.event, h.attempt, h.lease_epoch, h.worker_id from s5 cross join jobctl.job_history(s5.job_id) as h$$,
    $$select 'submitted', 0, null::bigint, null::text
      union all select 'claimed', 1, lease_epoch, 'tap_hist_w1' from c5a
      union all select 'released', 1, lease_epoch, 'tap_hist_w1' from c5a
      union all select 'claimed', 1, lease_epoch, 'tap_hist_w2' from c5b
      union all select 'completed', 1, lease_epoch, 'tap_hist_w2' from c5b$$,
    'submitted, claimed, released, claimed, completed (the released attempt does not count)'
);
select ok((select pg_temp.in_order(job_id) from s5), 'oldest first');

select isnt(obj_description('jobctl.job_history(bigint)'::regprocedure), null, 'job_history has a comment');

select * from finish();
rollback;
