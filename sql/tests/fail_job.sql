-- jobctl.fail_job: failed (retry after the backoff) / dead / NULL when fenced; the backoff
-- strategies, jitter and cap measured on the stored run_at. Tenant tap_fail_t, queues tap_fail_*.
begin;
select plan(46);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;
\ir helpers.psql

select has_function(
    'jobctl', 'fail_job', array['bigint', 'bigint', 'text', 'boolean', 'text', 'text'],
    'fail_job(job_id, lease_epoch, error, retryable, traceback, cause)'
);

-- claim the next job of a queue and fail it; the delay is the new run_at minus the time of the
-- failure (the `at` of the event it recorded)
create function pg_temp.claim_and_fail(p_queue text, p_error text default 'boom', p_retryable boolean default true)
returns table (job_id bigint, lease_epoch bigint, attempt integer, state text, delay interval)
language plpgsql as $$
declare
    v_claim record;
    v_state text;
begin
    select * into strict v_claim from jobctl.claim_job('tap_fail_w', array[p_queue]);
    v_state := jobctl.fail_job(v_claim.job_id, v_claim.lease_epoch, p_error, p_retryable);
    return query
    select v_claim.job_id, v_claim.lease_epoch, v_claim.attempt, v_state, j.run_at - e.at
    from jobctl.job as j
    inner join jobctl._event as e on e.job_id = j.job_id and e.event = v_state and e.attempt = v_claim.attempt
    where j.job_id = v_claim.job_id;
end
$$;

-- fixed 10 s, no jitter
create temp table s_fixed as
select * from jobctl.submit_job(
    'tap_fail_t', 'tap_fail_fixed', '{}', backoff => '{"strategy": "fixed", "base": "10 seconds", "jitter": false}'
);
create temp table f_fixed as
select * from pg_temp.claim_and_fail('tap_fail_fixed');
select is((select state from f_fixed), 'failed', 'a retryable failure with attempts left: failed');
select is((select delay from f_fixed), interval '10 seconds', 'fixed 10 s without jitter: run_at = failure time + 10 s');
select results_eq(
    $$select j.state, j.attempt, j.finished_at, j.last_error, j.lease_epoch
      from f_fixed as f cross join pg_temp.job(f.job_id) as j$$,
    $$select 'failed', 1, null::timestamptz, 'boom', lease_epoch from f_fixed$$,
    'the job is failed: attempt 1, not finished, last_error kept'
);
select results_eq(
    $$select d.run_at from f_fixed as f inner join jobctl._delayed as d on f.job_id = d.job_id$$,
    $$select j.run_at from f_fixed as f cross join pg_temp.job(f.job_id) as j$$,
    'it waits in jobctl._delayed until its run_at'
);
select is_empty(
    $$select 1 from f_fixed as f inner join jobctl._ready as r on f.job_id = r.job_id
      union all select 1 from f_fixed as f inner join jobctl._running as r on f.job_id = r.job_id$$,
    'it is neither ready nor running'
);
select is_empty(
    $$select * from jobctl.claim_job('tap_fail_w', array['tap_fail_fixed'])$$, 'it cannot be claimed before its run_at'
);
select results_eq(
    $$select h.event, h.attempt, h.lease_epoch, h.worker_id, h.detail
      from f_fixed as f cross join jobctl.job_history(f.job_id) as h where h.event <> 'submitted'$$,
    $$select 'claimed', 1, lease_epoch, 'tap_fail_w', null::text from f_fixed
      union all select 'failed', 1, lease_epoch, 'tap_fail_w', 'boom' from f_fixed$$,
    'history: the attempt''s claim and its failure'
);

-- exponential, base 1 s: 1 s, 2 s, 4 s
create temp table s_exp as
select * from jobctl.submit_job(
    'tap_fail_t', 'tap_fail_exp', '{}', max_attempts => 5,
    backoff => '{"strategy": "exponential", "base": "1 second", "jitter": false}'
);
create temp table f_exp as
select * from pg_temp.claim_and_fail('tap_fail_exp');
select pg_temp.make_due(job_id) from s_exp;
insert into f_exp
select * from pg_temp.claim_and_fail('tap_fail_exp');
select pg_temp.make_due(job_id) from s_exp;
insert into f_exp
select * from pg_temp.claim_and_fail('tap_fail_exp');
select results_eq(
    $$select attempt, state, delay from f_exp order by attempt$$,
    $$values (1, 'failed', '1 second'::interval), (2, 'failed', '2 seconds'), (3, 'failed', '4 seconds')$$,
    'exponential base 1 s: attempt 1 -> 1 s, attempt 2 -> 2 s, attempt 3 -> 4 s'
);
select is(
    (select count(distinct lease_epoch) from f_exp), 3::bigint, 'each attempt had its own lease_epoch'
);

-- linear, base 3 s: 3 s, 6 s
create temp table s_lin as
select * from jobctl.submit_job(
    'tap_fail_t', 'tap_fail_lin', '{}', backoff => '{"strategy": "linear", "base": "3 seconds", "jitter": false}'
);
create temp table f_lin as
select * from pg_temp.claim_and_fail('tap_fail_lin');
select pg_temp.make_due(job_id) from s_lin;
insert into f_lin
select * from pg_temp.claim_and_fail('tap_fail_lin');
select results_eq(
    $$select attempt, delay from f_lin order by attempt$$,
    $$values (1, '3 seconds'::interval), (2, '6 seconds')$$,
    'linear base 3 s: attempt 1 -> 3 s, attempt 2 -> 6 s'
);

-- capped by max: exponential 10 s, max 15 s: 10 s, then 15 s (not 20 s)
create temp table s_cap as
select * from jobctl.submit_job(
    'tap_fail_t', 'tap_fail_cap', '{}',
    backoff => '{"strategy": "exponential", "base": "10 seconds", "max": "15 seconds", "jitter": false}'
);
create temp table f_cap as
select * from pg_temp.claim_and_fail('tap_fail_cap');
select pg_temp.make_due(job_id) from s_cap;
insert into f_cap
select * from pg_temp.claim_and_fail('tap_fail_cap');
select results_eq(
    $$select attempt, delay from f_cap order by attempt$$,
    $$values (1, '10 seconds'::interval), (2, '15 seconds')$$,
    'exponential 10 s capped at 15 s: attempt 2 waits 15 s, not 20 s'
);

-- a huge attempt number does not overflow: the cap holds
create temp table s_big as
select * from jobctl.submit_job(
    'tap_fail_t', 'tap_fail_big', '{}', max_attempts => 1000,
    backoff => '{"strategy": "exponential", "base": "1 second", "max": "1 hour", "jitter": false}'
);
create temp table c_big as
select * from jobctl.claim_job('tap_fail_w', array['tap_fail_big']);
update jobctl.job set attempt = 900
where job_id = (select job_id from c_big);
select is((select jobctl.fail_job(job_id, lease_epoch, 'boom') from c_big), 'failed', 'attempt 900 fails');
select results_eq(
    $$select j.run_at - e.at from c_big cross join pg_temp.job(c_big.job_id) as j
      inner join jobctl._event as e on e.job_id = j.job_id and e.event = 'failed'$$,
    $$values ('1 hour'::interval)$$,
    'exponential at attempt 900: capped at max, no overflow'
);

-- jitter: uniform in [d/2, d]
do $do$
begin
    perform jobctl.submit_job(
        'tap_fail_t', 'tap_fail_jitter', '{}', backoff => '{"strategy": "fixed", "base": "10 seconds", "jitter": true}'
    )
    from generate_series(1, 20);
    perform jobctl.submit_job('tap_fail_t', 'tap_fail_default', '{}') from generate_series(1, 20);
end
$do$;
create temp table f_jit as
select f.*
from generate_series(1, 20) as g cross join lateral pg_temp.claim_and_fail('tap_fail_jitter', 'boom ' || g) as f;
select is((select count(distinct job_id) from f_jit), 20::bigint, 'twenty jobs with jitter failed');
select ok(
    (select bool_and(delay between interval '5 seconds' and interval '10 seconds') from f_jit),
    'fixed 10 s with jitter: every delay within [5 s, 10 s]'
);
select cmp_ok((select count(distinct delay) from f_jit), '>', 1::bigint, 'and the delays vary');

-- the default backoff (NULL): exponential 5 s with jitter, so attempt 1 waits 2.5 s to 5 s
create temp table f_def as
select f.*
from generate_series(1, 20) as g cross join lateral pg_temp.claim_and_fail('tap_fail_default', 'boom ' || g) as f;
select is((select count(distinct job_id) from f_def), 20::bigint, 'twenty jobs with the default backoff failed');
select ok(
    (select bool_and(delay between interval '2.5 seconds' and interval '5 seconds') from f_def),
    'default backoff, attempt 1: every delay within [2.5 s, 5 s]'
);

-- backoff 0: failed and due at once
create temp table s_zero as
select * from jobctl.submit_job(
    'tap_fail_t', 'tap_fail_zero', '{}', backoff => '{"strategy": "fixed", "base": "0 seconds", "jitter": false}'
);
create temp table f_zero as
select * from pg_temp.claim_and_fail('tap_fail_zero');
select results_eq(
    $$select state, delay from f_zero$$, $$values ('failed', '0 seconds'::interval)$$,
    'a zero backoff: failed, due at the failure time'
);
select results_eq(
    $$select r.run_at from f_zero as f inner join jobctl._ready as r on f.job_id = r.job_id$$,
    $$select j.run_at from f_zero as f cross join pg_temp.job(f.job_id) as j$$,
    'it is back in jobctl._ready at once'
);
select results_eq(
    $$select job_id, attempt from jobctl.claim_job('tap_fail_w', array['tap_fail_zero'])$$,
    $$select job_id, 2 from f_zero$$,
    'and claimable again, attempt 2'
);

-- no attempts left: dead
create temp table s_dead as
select * from jobctl.submit_job('tap_fail_t', 'tap_fail_dead', '{}', max_attempts => 1);
create temp table f_dead as
select * from pg_temp.claim_and_fail('tap_fail_dead', 'last straw');
select is((select state from f_dead), 'dead', 'failing the last attempt: dead');
select results_eq(
    $$select j.state, j.run_at, j.last_error, j.finished_at is not null from f_dead as f cross join pg_temp.job(f.job_id) as j$$,
    $$select 'dead', now(), 'last straw', true from f_dead$$,
    'the dead job is finished, run_at unchanged, last_error kept'
);
select is_empty(
    $$select 1 from f_dead as f inner join jobctl._ready as r on f.job_id = r.job_id
      union all select 1 from f_dead as f inner join jobctl._delayed as d on f.job_id = d.job_id
      union all select 1 from f_dead as f inner join jobctl._running as r on f.job_id = r.job_id$$,
    'a dead job is in no queue'
);
select results_eq(
    $$select h.event, h.detail from f_dead as f cross join jobctl.job_history(f.job_id) as h$$,
    $$values ('submitted', null::text), ('claimed', null), ('dead', 'last straw')$$,
    'history: submitted, claimed, dead'
);

-- not retryable: dead even with attempts left
create temp table s_nr as
select * from jobctl.submit_job('tap_fail_t', 'tap_fail_nr', '{}', max_attempts => 5);
create temp table f_nr as
select * from pg_temp.claim_and_fail('tap_fail_nr', 'bad input', false);
select is((select state from f_nr), 'dead', 'retryable = false: dead at attempt 1 of 5');
select results_eq(
    $$select j.state, j.attempt, j.max_attempts from f_nr as f cross join pg_temp.job(f.job_id) as j$$,
    $$values ('dead', 1, 5)$$,
    'attempt 1, max_attempts unchanged'
);

-- fenced: a stale epoch returns NULL and changes nothing
create temp table s_st as
select * from jobctl.submit_job('tap_fail_t', 'tap_fail_stale', '{}');
create temp table c_st as
select * from jobctl.claim_job('tap_fail_w', array['tap_fail_stale']);
select is((select jobctl.fail_job(job_id, lease_epoch + 1, 'x') from c_st), null, 'a newer epoch: NULL');
select is((select jobctl.fail_job(job_id, lease_epoch - 1, 'x') from c_st), null, 'an older epoch: NULL');
select is(jobctl.fail_job(-1, 1, 'x'), null, 'an unknown job: NULL');
select results_eq(
    $$select j.state, j.last_error, r.lease_epoch
      from c_st cross join pg_temp.job(c_st.job_id) as j inner join jobctl._running as r on c_st.job_id = r.job_id$$,
    $$select 'running', null::text, lease_epoch from c_st$$,
    'the job is still running under its lease, no error recorded'
);
select is_empty(
    $$select 1 from c_st inner join jobctl._event as e on c_st.job_id = e.job_id$$, 'and no event was written'
);
select ok((select jobctl.complete_job(job_id, lease_epoch) from c_st), 'the job completes');
select is((select jobctl.fail_job(job_id, lease_epoch, 'late') from c_st), null, 'failing a completed job: NULL');
select results_eq(
    $$select j.state, j.last_error from c_st cross join pg_temp.job(c_st.job_id) as j$$,
    $$values ('completed', null::text)$$,
    'it stays completed'
);

-- cancelled while running: fenced
create temp table s_can as
select * from jobctl.submit_job('tap_fail_t', 'tap_fail_can', '{}');
create temp table c_can as
select * from jobctl.claim_job('tap_fail_w', array['tap_fail_can']);
select is((select jobctl.cancel_job(job_id) from c_can), 'cancelled', 'the running job is cancelled');
select is((select jobctl.fail_job(job_id, lease_epoch, 'x') from c_can), null, 'failing a cancelled job: NULL');
select is((select j.state from c_can cross join pg_temp.job(c_can.job_id) as j), 'cancelled', 'it stays cancelled');

-- the error text
create temp table s_err as
select * from jobctl.submit_job('tap_fail_t', 'tap_fail_err', '{}', max_attempts => 5)
union all
select * from jobctl.submit_job('tap_fail_t', 'tap_fail_err', '{}', max_attempts => 5);
create temp table f_err1 as
select * from pg_temp.claim_and_fail('tap_fail_err', null);
create temp table f_err2 as
select * from pg_temp.claim_and_fail('tap_fail_err', repeat('e', 20000));
select is(
    (select j.last_error from f_err1 as f cross join pg_temp.job(f.job_id) as j), 'failed',
    'a NULL error is recorded as ''failed'''
);
select is(
    (select length(j.last_error) from f_err2 as f cross join pg_temp.job(f.job_id) as j), 10000,
    'a long error is truncated to 10,000 characters'
);

-- argument errors
select throws_ok(
    $$select jobctl.fail_job(null, 1, 'x')$$, 'JC001', 'job_id and lease_epoch must not be NULL', 'NULL job_id: JC001'
);
select throws_ok(
    $$select jobctl.fail_job(1, null, 'x')$$, 'JC001', 'job_id and lease_epoch must not be NULL',
    'NULL lease_epoch: JC001'
);
select throws_ok(
    $$select jobctl.fail_job(1, 1, 'x', null)$$, 'JC001', 'retryable must be true or false', 'NULL retryable: JC001'
);
select is(
    (select j.state from c_big cross join pg_temp.job(c_big.job_id) as j), 'failed',
    'argument errors change nothing'
);

select isnt(
    obj_description('jobctl.fail_job(bigint, bigint, text, boolean, text, text)'::regprocedure), null, 'fail_job has a comment'
);

select * from finish();
rollback;
