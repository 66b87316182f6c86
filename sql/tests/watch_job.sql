-- jobctl.watch_job and jobctl._notify_watchers: a watcher is registered for an unfinished job of the
-- caller's tenants, and removed (its NOTIFY queued for the commit) when the job completes, dies or
-- is cancelled; the tick prunes expired watchers. Whether the NOTIFY arrives needs a commit and a
-- second session: tests/test_wait.py. Tenants tap_watch_a, tap_watch_b; queue tap_watch_q.
begin;
select plan(29);
\ir helpers.psql
set local jit = off;

select has_function('jobctl', 'watch_job', array['bigint', 'text', 'interval'], 'watch_job(job_id, channel, wait) exists');
select function_returns(
    'jobctl', 'watch_job', array['bigint', 'text', 'interval'], 'setof jobctl.job_info', 'it returns setof jobctl.job_info'
);
select isnt(
    obj_description('jobctl.watch_job(bigint, text, interval)'::regprocedure, 'pg_proc'), null, 'it has a comment'
);
select has_function('jobctl', '_notify_watchers', array['bigint[]'], '_notify_watchers(ids) exists');

-- two channels, as two callers would choose them
create temp table ch (n int, channel text);
insert into ch values (1, 'jobctl_wait_' || md5('tap-watch-1')), (2, 'jobctl_wait_' || md5('tap-watch-2'));
create function pg_temp.ch(p_n int) returns text language sql as $$ select channel from ch where n = p_n $$;

-- jobs: 1 to complete, 2 to fail for good, 3 to cancel, 4 of tenant b, 5 to run out, 6 near the tenant's bound
create temp table s as
select
    x.n,
    j.job_id
from (
    values (1, 'tap_watch_a'), (2, 'tap_watch_a'), (3, 'tap_watch_a'), (4, 'tap_watch_b'), (5, 'tap_watch_a'),
    (6, 'tap_watch_a')
) as x (n, tenant)
cross join lateral jobctl.submit_job(x.tenant, 'tap_watch_q', jsonb_build_object('n', x.n), max_attempts => 1) as j;
create function pg_temp.id(p_n int) returns bigint language sql as $$ select job_id from s where n = p_n $$;
create function pg_temp.watchers(p_n int) returns bigint language sql as $$
    select count(*) from jobctl._watcher where job_id = pg_temp.id(p_n)
$$;

-- bounds
select throws_ok(
    format($$select * from jobctl.watch_job(%s, 'jobctl_wait_XYZ')$$, pg_temp.id(1)), 'JC001',
    'channel must be ''jobctl_wait_'' followed by 32 lowercase hex digits', 'a channel not of the form: JC001'
);
select throws_ok(
    format($$select * from jobctl.watch_job(%s, 'jobctl')$$, pg_temp.id(1)), 'JC001', null,
    'the workers'' channel cannot be named'
);
select throws_ok(
    format($$select * from jobctl.watch_job(%s, %L, '61 minutes')$$, pg_temp.id(1), pg_temp.ch(1)), 'JC001',
    'wait must be more than 0 and at most 1 hour', 'a wait over an hour: JC001'
);
select throws_ok(
    format($$select * from jobctl.watch_job(%s, %L, '0 seconds')$$, pg_temp.id(1), pg_temp.ch(1)), 'JC001',
    null, 'a wait of 0: JC001'
);
select is_empty(
    format($$select * from jobctl.watch_job(-1, %L)$$, pg_temp.ch(1)), 'an unknown id: zero rows'
);
select is(
    (
        select count(*) from jobctl._watcher
        where job_id = -1
    ), 0::bigint, 'and no watcher'
);

-- a pending job: the row, and a watcher with the wait as its expiry
select results_eq(
    format($$select job_id, state from jobctl.watch_job(%s, %L, '30 seconds')$$, pg_temp.id(1), pg_temp.ch(1)),
    format($$values (%s::bigint, 'pending'::text)$$, pg_temp.id(1)),
    'watch_job returns the job as get_job does'
);
select results_eq(
    format($$select tenant_id, channel,
        expires_at > now() + interval '29 seconds' and expires_at < clock_timestamp() + interval '30 seconds'
      from jobctl._watcher where job_id = %s$$, pg_temp.id(1)),
    format($$values ('tap_watch_a'::text, %L::text, true)$$, pg_temp.ch(1)),
    'a watcher with its channel, expiring after the wait'
);
select jobctl.watch_job(pg_temp.id(k.n), pg_temp.ch(k.c)) from (values (1, 2), (2, 1), (3, 1), (5, 1)) as k (n, c);
select is(pg_temp.watchers(1), 2::bigint, 'two callers wait for job 1');
select results_eq(
    format($$select tenant_id, bucket from jobctl._tenant_lock where name = 'watcher' and tenant_id = 'tap_watch_a'
      and bucket = jobctl._lock_bucket('watcher', %L)$$, pg_temp.id(1)::text),
    format($$values ('tap_watch_a'::text, %s)$$, jobctl._lock_bucket('watcher', pg_temp.id(1)::text)),
    'the count and insert ran under the job''s watcher lock, a row of the tenant''s own (tests/test_wait.py races it)'
);

-- complete 1, fail 2 for good, cancel 3 (the tenant's jobs are claimed in id order: 1, 2, 5)
create temp table c as
select * from jobctl.claim_job('tap_watch_w', array['tap_watch_q'], 3);
select is(pg_temp.watchers(1), 2::bigint, 'a claim does not touch the watchers');
create function pg_temp.epoch(p_n int) returns bigint language sql as $$
    select c.lease_epoch from c where c.job_id = pg_temp.id(p_n)
$$;
select ok(jobctl.complete_job(pg_temp.id(1), pg_temp.epoch(1), '{"ok": 1}'), 'job 1 completes');
select is(pg_temp.watchers(1), 0::bigint, 'its completion removes both watchers (their NOTIFY is queued for the commit)');
select is(
    jobctl.fail_job(pg_temp.id(2), pg_temp.epoch(2), 'boom'), 'dead', 'job 2 dies'
);
select is(pg_temp.watchers(2), 0::bigint, 'its death removes its watcher');
select is(jobctl.cancel_job(pg_temp.id(3)), 'cancelled', 'job 3 is cancelled');
select is(pg_temp.watchers(3), 0::bigint, 'the cancel removes its watcher');
select is(pg_temp.watchers(5), 1::bigint, 'the running job 5 still has its watcher');

-- a finished job: the row, no watcher
select results_eq(
    format($$select state from jobctl.watch_job(%s, %L)$$, pg_temp.id(1), pg_temp.ch(1)), $$values ('completed'::text)$$,
    'a finished job: returned at once'
);
select is(pg_temp.watchers(1), 0::bigint, 'and no watcher registered');

-- tenant isolation: a login of tenant a sees b's job as unknown
create role tap_watch_role;
grant jobctl_reader to tap_watch_role;
-- the table made before the role acts: it has no TEMPORARY on the database (sql/grants.sql)
create temp table iso (other bigint, own bigint);
grant select on s, ch to tap_watch_role;
grant insert on iso to tap_watch_role;
select jobctl.grant_tenant('tap_watch_role', 'tap_watch_a');
set local session authorization tap_watch_role;
insert into iso
select
    (select count(*) from jobctl.watch_job(pg_temp.id(4), pg_temp.ch(2))) as other,
    (select count(*) from jobctl.watch_job(pg_temp.id(5), pg_temp.ch(2))) as own;
reset session authorization;
select results_eq(
    $$select other, own from iso$$, $$values (0::bigint, 1::bigint)$$,
    'a login of tenant a: b''s job answers zero rows, its own job one'
);
select is(pg_temp.watchers(4), 0::bigint, 'no watcher for b''s job');

-- the tick prunes expired watchers
update jobctl._watcher set expires_at = now() - interval '1 second'
where job_id = pg_temp.id(5) and channel = pg_temp.ch(1);
-- wait for pg_cron's tick, if one runs, and keep it out (the lock is re-entrant for this session)
lock table jobctl_owner._tick_lock in exclusive mode;
select jobctl.tick(false);
select is(pg_temp.watchers(5), 1::bigint, 'the tick removes the expired watcher, keeps the live one');

-- a job's watchers are capped: the 101st is refused
insert into jobctl._watcher (job_id, tenant_id, channel, expires_at)
select
    pg_temp.id(5) as job_id,
    'tap_watch_a' as tenant_id,
    pg_temp.ch(1) as channel,
    now() + interval '1 minute' as expires_at
from generate_series(1, 99);
select throws_ok(
    format($$select * from jobctl.watch_job(%s, %L)$$, pg_temp.id(5), pg_temp.ch(2)), 'JC004',
    format('job %s already has 100 watchers, the most', pg_temp.id(5)), 'a job''s 101st watcher: JC004'
);

-- near the tenant's bound (9,000 watchers) the count is taken again under the tenant's own lock
insert into jobctl._watcher (job_id, tenant_id, channel, expires_at)
select
    -g as job_id,
    'tap_watch_a' as tenant_id,
    pg_temp.ch(1) as channel,
    now() + interval '1 minute' as expires_at
from generate_series(1, 9000) as g;
select jobctl.watch_job(pg_temp.id(6), pg_temp.ch(2));
select is(
    (
        select count(*) from jobctl._tenant_lock
        where name = 'watchers' and tenant_id = 'tap_watch_a'
    ), 1::bigint,
    'a tenant with 9,000 watchers takes its ''watchers'' row as well'
);

select * from finish();
rollback;
