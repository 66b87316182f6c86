-- jobctl.tick: one pass of periodic work (promote due delayed jobs, reap expired leases, expand
-- schedules, keep the queue tables small), run by workers a few times a second and by pg_cron
-- every minute. The work is global; this checks that our own rows are handled and counted.
-- Tenant tap_tick_t, queues tap_tick_*.
begin;
select plan(18);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;
\ir helpers.psql

select has_function('jobctl', 'tick', array['boolean'], 'tick(boolean) exists');
select function_returns('jobctl', 'tick', array['boolean'], 'integer', 'it returns integer (jobs moved)');
select isnt(obj_description('jobctl.tick(boolean)'::regprocedure), null, 'tick has a comment');
select is_definer('jobctl', 'tick', array['boolean'], 'tick is SECURITY DEFINER (workers call it)');

-- the reaper runs alone (a try-lock): wait for pg_cron's pass to finish and keep it out of this
-- transaction, so tick() below reaps (the lock is re-entrant for this session)
-- wait for any other reaper (pg_cron's tick) to finish and keep it out of this transaction
select name from jobctl._lock
where name = 'reap' and bucket = 0 for update;

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

-- one caller at a time: while another session's tick holds its lock (here: a lock this session
-- cannot take, shown by a job made due that a tick in another session would not promote)
select is(
    (
        select count(*)::integer
        from pg_locks
        where
            locktype = 'relation' and relation = 'jobctl_owner._tick_lock'::regclass
            and granted and pid <> pg_backend_pid()
    ),
    0, 'no other tick runs now (the try-lock below is this session''s)'
);

-- the lane cache: with the horizon free, rows newer ones superseded are deleted, the newest kept
insert into jobctl._lane_cache (queues_key, fresh_until, queues, tenants, limited, lows, total, listed_at)
values
('{tap_tick_lc}', now() - interval '10 seconds', '{}', '{}', '{}', '{}', 0, now() - interval '10 seconds'),
('{tap_tick_lc}', now() - interval '5 seconds', '{}', '{}', '{}', '{}', 0, now() - interval '5 seconds'),
('{tap_tick_lc_alone}', now() - interval '10 seconds', '{}', '{}', '{}', '{}', 0, now() - interval '10 seconds'),
('{tap_tick_lc_unused}', now() - interval '2 minutes', '{}', '{}', '{}', '{}', 0, now() - interval '2 minutes');
select ok(not jobctl._horizon_held('1 day'), 'no transaction has held the horizon for a day');
select ok(
    jobctl._horizon_held('0 seconds'), 'this test''s own open transaction (a snapshot and an XID) holds the horizon'
);
select jobctl.tick(false);
select set_eq(
    $$select queues_key, fresh_until from jobctl._lane_cache where queues_key like '{tap_tick_lc%'$$,
    $$values ('{tap_tick_lc}', now() - interval '5 seconds'), ('{tap_tick_lc_alone}', now() - interval '10 seconds')$$,
    'tick deletes the lane-cache rows a newer one superseded and those unused for a minute, and keeps the newest'
);

-- tick(false) leaves the recount of max_pending tenants to the full pass
select jobctl.put_tenant('tap_tick_quota', max_pending => 100);
select jobctl.submit_job('tap_tick_quota', 'tap_tick_pq', '{}');
update jobctl.tenant set pending_offset = pending_offset + 40
where tenant_id = 'tap_tick_quota';
create temp table offset_before as
select pending_offset from jobctl.tenant
where tenant_id = 'tap_tick_quota';
select jobctl.tick(false);
select is(
    (
        select pending_offset from jobctl.tenant
        where tenant_id = 'tap_tick_quota'
    ),
    (select pending_offset from offset_before),
    'tick(false) does not recount'
);
select jobctl.tick();
select isnt(
    (
        select pending_offset from jobctl.tenant
        where tenant_id = 'tap_tick_quota'
    ),
    (select pending_offset from offset_before),
    'tick() recounts the tenant''s unfinished jobs'
);

-- pg_cron runs it every minute (when pg_cron is installed in this database)
select
    case
        when to_regclass('cron.job') is null then skip('pg_cron is not installed in this database', 1)
        else is(pg_temp.cron_job('jobctl-tick'), '* * * * * SELECT jobctl.tick()', 'pg_cron runs tick() every minute')
    end;

select * from finish();
rollback;
