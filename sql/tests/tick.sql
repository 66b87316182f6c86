-- jobctl.tick: one pass of periodic work (promote due delayed jobs, reap expired leases), run by
-- pg_cron every minute. Both halves are global; this checks that our own rows are handled and
-- counted. Tenant tap_tick_t, queues tap_tick_*.
begin;
select plan(12);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;
\ir helpers.psql

select has_function('jobctl', 'tick', array[]::text[], 'tick() exists');
select function_returns('jobctl', 'tick', array[]::text[], 'integer', 'it returns integer (jobs moved)');
select isnt(obj_description('jobctl.tick()'::regprocedure), null, 'tick has a comment');
select isnt_definer('jobctl', 'tick', array[]::text[], 'tick is not SECURITY DEFINER');

-- the reaper runs alone (a try-lock): wait for pg_cron's pass to finish and keep it out of this
-- transaction, so tick() below reaps (the lock is re-entrant for this session)
select pg_advisory_xact_lock(19011, 1);

-- a running job whose lease has expired, and a delayed job now due (claim_job promotes due jobs
-- itself, so the delayed job is made due after the claim)
create temp table s_running as
select * from jobctl.submit_job('tap_tick_t', 'tap_tick_rq', '{}');
create temp table s_delayed as
select * from jobctl.submit_job('tap_tick_t', 'tap_tick_dq', '{}', run_at => now() + interval '1 hour');
create temp table c_running as
select * from jobctl.claim_job('tap_tick_w', array['tap_tick_rq']);
update jobctl._running set lease_expires_at = now() - interval '1 second'
where job_id = (select job_id from c_running);
update jobctl._delayed set run_at = now() - interval '1 second'
where job_id = (select job_id from s_delayed);
update jobctl.job set run_at = now() - interval '1 second'
where job_id = (select job_id from s_delayed);

create temp table ticked as
select jobctl.tick() as n;
select cmp_ok((select n from ticked), '>=', 2, 'tick() counts the job it promoted and the one it reaped');
select is_empty(
    $$select 1 from jobctl._delayed where job_id = (select job_id from s_delayed)$$,
    'the due delayed job left jobctl._delayed'
);
select results_eq(
    $$select job_id from jobctl._ready where job_id = (select job_id from s_delayed)$$,
    $$select job_id from s_delayed$$,
    'and is ready'
);
select results_eq(
    $$select j.state, j.last_error from c_running as c cross join jobctl.get_job(c.job_id) as j$$,
    $$values ('failed', 'lease expired: the worker stopped heartbeating')$$,
    'the expired lease was reaped: the job is failed'
);
select is(
    (select jobctl.heartbeat(job_id, lease_epoch) from c_running), 'lost', 'and its old epoch is lost'
);
select results_eq(
    $$select job_id from jobctl.claim_job('tap_tick_w', array['tap_tick_dq', 'tap_tick_rq'], 10) order by 1$$,
    $$select job_id from s_delayed union all select job_id from s_running order by 1$$,
    'both jobs are claimable'
);
select cmp_ok(jobctl.tick(), '>=', 0, 'another pass runs (it has nothing of ours left to do)');

-- pg_cron runs it every minute (when pg_cron is installed in this database)
select
    case
        when to_regclass('cron.job') is null then skip('pg_cron is not installed in this database', 1)
        else is(pg_temp.cron_job('jobctl-tick'), '* * * * * SELECT jobctl.tick()', 'pg_cron runs tick() every minute')
    end;

select * from finish();
rollback;
