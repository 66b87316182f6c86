-- What the dashboard's pages call: the registry of workers (worker_beat, worker_gone,
-- list_workers, tick's purge), pausing, resuming and running schedules by hand, the audit log
-- (list_audit), and the tenant functions an API token may call for its own tenants (tenants:read,
-- tenants:write: list_tenants, pause_tenant, list_api_tokens, list_tenant_grants, health_checks).
-- A token is stood for by setting jobctl.api_token, as jobctl.authenticate does. (The same through
-- the HTTP API: tests/test_admin_api.py.) Tenants tap_dash_*, workers tap_dash_w*.
begin;
select plan(82);
set local jit = off;
\ir helpers.psql

select has_function(
    'jobctl', 'worker_beat', array['text', 'text', 'integer', 'text[]', 'integer', 'integer'], 'worker_beat exists'
);
select has_function('jobctl', 'worker_gone', array['text'], 'worker_gone exists');
select has_function('jobctl', 'list_workers', array['interval'], 'list_workers exists');
select has_function('jobctl', 'pause_schedule', array['text', 'text'], 'pause_schedule exists');
select has_function('jobctl', 'resume_schedule', array['text', 'text'], 'resume_schedule exists');
select has_function('jobctl', 'run_schedule', array['text', 'text'], 'run_schedule exists');
select has_function('jobctl', 'list_audit', array['text', 'bigint', 'integer'], 'list_audit exists');
select is_empty(
    $$select p.proname from pg_catalog.pg_proc as p
      where p.pronamespace = 'jobctl'::regnamespace
        and p.proname in ('worker_beat', 'worker_gone', 'list_workers', 'pause_schedule', 'resume_schedule',
                          'run_schedule', 'list_audit')
        and (obj_description(p.oid, 'pg_proc') is null
             or obj_description(p.oid, 'pg_proc') !~ 'Errors:' or obj_description(p.oid, 'pg_proc') !~ 'Example:')$$,
    'each has a comment with Errors: and Example:'
);
select ok(
    jobctl._api_scopes() @> array['tenants:read', 'tenants:write', 'workers:read', 'audit:read'],
    'the new scopes are API scopes'
);

-- tokens: n -> (tenant, scopes); pg_temp.as_token(n) makes the rest of the transaction act as it,
-- pg_temp.as_token(null) as the owner again
create temp table tok as
select
    x.n,
    t.token
from (
    values
    (1, 'tap_dash_a', '{tenants:read,tenants:write,workers:read,audit:read,schedules:write}'::text[]),
    (2, 'tap_dash_b', '{tenants:read,schedules:write}'),
    (3, null, '{tenants:read,workers:read,audit:read}'),
    (4, 'tap_dash_a', '{tenants:read}'),
    (5, null, '{jobs:read}')
) as x (n, tenant_id, scopes)
cross join lateral jobctl.create_api_token(x.tenant_id, x.scopes, 'tap_dash') as t (token);
create function pg_temp.as_token(p_n integer) returns void
language sql as $$
    select set_config('jobctl.api_token', coalesce((select t.token from tok as t where t.n = p_n), ''), true)
$$;

-- ---------------------------------------------------------------- workers
select lives_ok(
    $$select jobctl.worker_beat('tap_dash_w1', 'host-1', 101, array['tap_dash_q2', 'tap_dash_q1'], 10, 2)$$,
    'a first beat registers the worker'
);
select results_eq(
    $$select host, pid, queues, concurrency, in_flight, alive, running from jobctl.list_workers()
      where worker_id = 'tap_dash_w1'$$,
    $$values ('host-1', 101, array['tap_dash_q1', 'tap_dash_q2'], 10, 2, true, 0::bigint)$$,
    'list_workers: what it reported (queues sorted), alive, no leases'
);
update jobctl._worker set started_at = now() - interval '1 hour', last_seen_at = now() - interval '2 minutes'
where worker_id = 'tap_dash_w1';
select is(
    (
        select alive from jobctl.list_workers()
        where worker_id = 'tap_dash_w1'
    ), false,
    'not seen for 2 minutes: not alive (stale 1 minute)'
);
select is(
    (
        select alive from jobctl.list_workers(interval '5 minutes')
        where worker_id = 'tap_dash_w1'
    ), true,
    'alive within a longer stale'
);
select jobctl.worker_beat('tap_dash_w1', 'host-1', 101, null, 10, 7);
select results_eq(
    $$select queues, in_flight, started_at = now() - interval '1 hour', last_seen_at = now(), alive
      from jobctl.list_workers() where worker_id = 'tap_dash_w1'$$,
    $$values (null::text[], 7, true, true, true)$$,
    'a later beat updates it and last_seen_at, keeps started_at; NULL queues: all'
);
select jobctl.worker_beat('tap_dash_w1', 'host-1', 202, null, 10, 0);
select is(
    (
        select started_at = now() from jobctl.list_workers()
        where worker_id = 'tap_dash_w1'
    ), true,
    'a beat from another pid under the same id starts it afresh'
);

-- its leases
select jobctl.submit_job('tap_dash_a', 'tap_dash_q1', '{}');
select jobctl.submit_job('tap_dash_a', 'tap_dash_q1', '{}');
select is(
    (select count(*)::integer from jobctl.claim_job('tap_dash_w1', array['tap_dash_q1'], 2)), 2, 'the worker claims 2 jobs'
);
select is((
    select running from jobctl.list_workers()
    where worker_id = 'tap_dash_w1'
), 2::bigint, 'running: its 2 leases');

-- bounds, at the bound and one past it
select lives_ok(
    format($$select jobctl.worker_beat(%L, %L, 0, (select array_agg('q' || i) from generate_series(1, 1000) as i),
        100000, 100000)$$, 'tap_dash_w' || repeat('x', 190), repeat('h', 255)),
    'worker_id of 200 and host of 255 characters, pid 0, 1000 queues, concurrency and in_flight 100000'
);
select throws_ok(
    format($$select jobctl.worker_beat(%L, 'h', 1, null, 1, 0)$$, repeat('w', 201)),
    'JC001', 'worker_id is missing or out of range', 'worker_id of 201 characters'
);
select throws_ok(
    $$select jobctl.worker_beat('', 'h', 1, null, 1, 0)$$, 'JC001', 'worker_id is missing or out of range', 'an empty worker_id'
);
select throws_ok(
    format($$select jobctl.worker_beat('tap_dash_w2', %L, 1, null, 1, 0)$$, repeat('h', 256)),
    'JC001', 'host is missing or out of range', 'host of 256 characters'
);
select throws_ok(
    $$select jobctl.worker_beat('tap_dash_w2', E'h\x1b', 1, null, 1, 0)$$,
    'JC001', 'host is missing or out of range', 'a host with a control character'
);
select throws_ok(
    $$select jobctl.worker_beat('tap_dash_w2', 'h', -1, null, 1, 0)$$, 'JC001', 'pid is missing or out of range', 'pid -1'
);
select throws_ok(
    $$select jobctl.worker_beat('tap_dash_w2', 'h', 1, (select array_agg('q' || i) from generate_series(1, 1001) as i), 1, 0)$$,
    'JC001', 'queues is missing or out of range', '1001 queues'
);
select throws_ok(
    $$select jobctl.worker_beat('tap_dash_w2', 'h', 1, array['ok', ''], 1, 0)$$,
    'JC001', 'queues is missing or out of range', 'an empty queue name'
);
select throws_ok(
    $$select jobctl.worker_beat('tap_dash_w2', 'h', 1, null, 0, 0)$$,
    'JC001', 'concurrency is missing or out of range', 'concurrency 0'
);
select throws_ok(
    $$select jobctl.worker_beat('tap_dash_w2', 'h', 1, null, 100001, 0)$$,
    'JC001', 'concurrency is missing or out of range', 'concurrency 100001'
);
select throws_ok(
    $$select jobctl.worker_beat('tap_dash_w2', 'h', 1, null, 1, -1)$$,
    'JC001', 'in_flight is missing or out of range', 'in_flight -1'
);
select throws_ok(
    $$select jobctl.worker_beat('tap_dash_w2', 'h', 1, null, 1, 100001)$$,
    'JC001', 'in_flight is missing or out of range', 'in_flight 100001'
);
select is(
    pg_temp.error_of($$select jobctl.worker_beat('tap_dash_w2', 'h', null, null, 1, 0)$$),
    'JC001: pid is missing or out of range (field: pid)', 'the DETAIL names the field'
);
select lives_ok($$select * from jobctl.list_workers(interval '1 second')$$, 'stale 1 second');
select lives_ok($$select * from jobctl.list_workers(interval '1 hour')$$, 'stale 1 hour');
select throws_ok(
    $$select * from jobctl.list_workers(interval '999 milliseconds')$$, 'JC001', 'stale must be from 1 second to 1 hour',
    'stale under a second'
);
select throws_ok(
    $$select * from jobctl.list_workers(interval '1 hour 1 second')$$, 'JC001', 'stale must be from 1 second to 1 hour',
    'stale over an hour'
);

-- a worker id belongs to the login that registered it
create role tap_dash_other_login nologin;
grant jobctl_worker to tap_dash_other_login;
set local session authorization tap_dash_other_login;
select throws_ok(
    $$select jobctl.worker_beat('tap_dash_w1', 'host-x', 1, null, 1, 0)$$, '42501',
    'worker tap_dash_w1 is registered by another login', 'another login cannot beat for a registered worker'
);
select jobctl.worker_gone('tap_dash_w1');
reset session authorization;
select is(
    (
        select count(*) from jobctl._worker as w
        where w.worker_id = 'tap_dash_w1'
    ),
    1::bigint,
    'nor remove it'
);

-- only callers acting for every tenant list workers
select pg_temp.as_token(1);
select throws_ok(
    $$select * from jobctl.list_workers()$$, '42501', null, 'a tenant token with workers:read is refused: workers are shared'
);
select pg_temp.as_token(5);
select throws_ok($$select * from jobctl.list_workers()$$, 'JC021', null, 'an admin token without workers:read: JC021');
select pg_temp.as_token(3);
select ok(
    exists (
        select from jobctl.list_workers()
        where worker_id = 'tap_dash_w1'
    ), 'an admin token with workers:read lists them'
);
select pg_temp.as_token(null);

-- gone, and forgotten after an hour by the tick
select lives_ok($$select jobctl.worker_gone('tap_dash_nobody')$$, 'worker_gone of an unknown id changes nothing');
select jobctl.worker_gone('tap_dash_w' || repeat('x', 190));
select is_empty(
    $$select from jobctl._worker where worker_id like 'tap_dash_wx%'$$, 'worker_gone removes the worker'
);
select throws_ok($$select jobctl.worker_gone('')$$, 'JC001', null, 'worker_gone: an empty worker_id');
select jobctl.worker_beat('tap_dash_w3', 'host-3', 3, null, 1, 0);
update jobctl._worker set last_seen_at = now() - interval '61 minutes'
where worker_id = 'tap_dash_w1';
update jobctl._worker set last_seen_at = now() - interval '59 minutes'
where worker_id = 'tap_dash_w3';
-- wait for pg_cron's tick, if one runs, and keep it out (the lock is re-entrant for this session)
lock table jobctl_owner._tick_lock in exclusive mode;
select jobctl.tick(false);
select results_eq(
    $$select worker_id from jobctl._worker where worker_id like 'tap_dash_w%' order by 1$$,
    $$values ('tap_dash_w3')$$,
    'tick forgets the worker not seen for over an hour, keeps the one seen 59 minutes ago'
);

-- ---------------------------------------------------------------- schedules
select jobctl.put_schedule('tap_dash_a', 'every', '@every 1 minute', 'tap_dash_sq', '{"s": 1}', priority => 7, catch_up => 1000);
select is(jobctl.pause_schedule('tap_dash_a', 'every'), true, 'pause_schedule: the state changed');
select is(jobctl.pause_schedule('tap_dash_a', 'every'), false, 'a second pause changes nothing');
select is(
    (
        select paused from jobctl.list_schedules('tap_dash_a')
        where name = 'every'
    ), true,
    'list_schedules shows it paused (its last column)'
);
-- due for an hour: 60 missed fire times
update jobctl.schedule set next_fire_at = now() - interval '1 hour'
where tenant_id = 'tap_dash_a' and name = 'every';
select jobctl.expand_schedules();
select is(pg_temp.n_jobs('tap_dash_a'), 2::bigint, 'a paused schedule, though due, is not expanded');
select is(
    (
        select next_fire_at from jobctl.schedule
        where tenant_id = 'tap_dash_a' and name = 'every'
    ), now() - interval '1 hour',
    'and its next_fire_at is left as it was'
);
select jobctl.put_schedule('tap_dash_a', 'every', '@every 1 minute', 'tap_dash_sq', '{"s": 2}', priority => 7, catch_up => 1000);
select is(
    (
        select paused from jobctl.schedule
        where tenant_id = 'tap_dash_a' and name = 'every'
    ), true,
    'put_schedule keeps it paused'
);
select is(jobctl.resume_schedule('tap_dash_a', 'every'), true, 'resume_schedule: the state changed');
select results_eq(
    $$select paused, next_fire_at > clock_timestamp(), next_fire_at <= clock_timestamp() + interval '1 minute'
      from jobctl.schedule where tenant_id = 'tap_dash_a' and name = 'every'$$,
    $$values (false, true, true)$$,
    'resumed: its next fire time is the first one after now'
);
select jobctl.expand_schedules();
select is(pg_temp.n_jobs('tap_dash_a'), 2::bigint, 'resume does not burst: none of the 60 missed runs is enqueued');
create temp table before_resume as select next_fire_at from jobctl.schedule
where tenant_id = 'tap_dash_a' and name = 'every';
select is(jobctl.resume_schedule('tap_dash_a', 'every'), false, 'resuming a schedule that runs changes nothing');
select is(
    (
        select next_fire_at from jobctl.schedule
        where tenant_id = 'tap_dash_a' and name = 'every'
    ),
    (select next_fire_at from before_resume), 'and keeps its next fire time'
);

-- run_schedule: one job now, from the schedule's queue, payload and priority; paused or not
select jobctl.pause_schedule('tap_dash_a', 'every');
create temp table ran as select jobctl.run_schedule('tap_dash_a', 'every') as job_id;
select results_eq(
    $$select j.queue, j.payload, j.priority::integer, j.state, j.run_at <= now() from jobctl.job as j
      where j.job_id = (select r.job_id from ran as r)$$,
    $$values ('tap_dash_sq', '{"s": 2}'::jsonb, 7, 'pending', true)$$,
    'run_schedule submits one job of the schedule, due now, even while it is paused'
);
select results_eq(
    $$select last_job_id, last_fire_at, next_fire_at = (select b.next_fire_at from before_resume as b)
      from jobctl.schedule where tenant_id = 'tap_dash_a' and name = 'every'$$,
    $$select job_id, null::timestamptz, true from ran$$,
    'it becomes the schedule''s last job; last_fire_at and next_fire_at are unchanged'
);
select
    throws_ok(
        $$select jobctl.run_schedule('tap_dash_a', 'nope')$$,
        'P0002',
        'no schedule nope of tenant tap_dash_a',
        'run_schedule: unknown'
    );
select throws_ok($$select jobctl.pause_schedule('tap_dash_a', 'nope')$$, 'P0002', null, 'pause_schedule: unknown');
select throws_ok($$select jobctl.resume_schedule('tap_dash_a', 'nope')$$, 'P0002', null, 'resume_schedule: unknown');
select pg_temp.as_token(2);
select throws_ok(
    $$select jobctl.pause_schedule('tap_dash_a', 'every')$$, '42501', 'tenant_id: no schedules:write access to tenant tap_dash_a',
    'another tenant''s token may not pause it'
);
select throws_ok($$select jobctl.resume_schedule('tap_dash_a', 'every')$$, '42501', null, 'nor resume it');
select throws_ok($$select jobctl.run_schedule('tap_dash_a', 'nope')$$, '42501', null, 'nor run it (nor learn it does not exist)');
select pg_temp.as_token(null);
select results_eq(
    $$select action, detail ->> 'name' from jobctl.audit_log
      where tenant_id = 'tap_dash_a' and action like '%_schedule' order by audit_id$$,
    $$values ('pause_schedule', 'every'), ('resume_schedule', 'every'), ('pause_schedule', 'every'),
             ('run_schedule', 'every')$$,
    'pause, resume and run are audited (the calls that changed nothing are not)'
);

-- ---------------------------------------------------------------- audit
select jobctl.put_tenant('tap_dash_b');
select jobctl.pause_queue('tap_dash_sq');  -- an entry with no tenant
select throws_ok($$select * from jobctl.list_audit(max_count => 0)$$, 'JC001', 'max_count must be from 1 to 1000', 'max_count 0');
select throws_ok($$select * from jobctl.list_audit(max_count => 1001)$$, 'JC001', null, 'max_count 1001');
select lives_ok($$select * from jobctl.list_audit(max_count => 1000)$$, 'max_count 1000');
select results_eq(
    $$select action from jobctl.list_audit('tap_dash_a', max_count => 2)$$,
    $$values ('run_schedule'), ('pause_schedule')$$,
    'newest first, max_count entries'
);
select results_eq(
    $$select action from jobctl.list_audit('tap_dash_a',
        (select min(audit_id) from jobctl.list_audit('tap_dash_a', max_count => 2)), 2)$$,
    $$values ('resume_schedule'), ('pause_schedule')$$,
    'before_id: the next page'
);
select pg_temp.as_token(1);
select is_empty(
    $$select from jobctl.list_audit(max_count => 1000) where tenant_id is distinct from 'tap_dash_a'$$,
    'a tenant token sees its tenant''s entries only, none without a tenant'
);
select throws_ok(
    $$select * from jobctl.list_audit('tap_dash_b')$$, '42501', 'tenant_id: no audit:read access to tenant tap_dash_b',
    'and may not ask for another tenant''s'
);
select pg_temp.as_token(3);
select ok(
    exists (
        select from jobctl.list_audit(max_count => 1000)
        where action = 'pause_queue' and tenant_id is null
    ),
    'an admin token sees the entries with no tenant'
);

-- ---------------------------------------------------------------- tenant administration by token
create role tap_dash_role;
select pg_temp.as_token(null);
select jobctl.grant_tenant('tap_dash_role', 'tap_dash_a');
select jobctl.grant_tenant('tap_dash_role', 'tap_dash_b');
select pg_temp.as_token(1);
select results_eq(
    $$select tenant_id from jobctl.list_tenants()$$, $$values ('tap_dash_a')$$, 'list_tenants: the token''s tenant only'
);
select is(
    (
        select count(*) from jobctl.list_api_tokens()
        where tenant_id is distinct from 'tap_dash_a'
    ), 0::bigint,
    'list_api_tokens: its tenant''s tokens only, no admin token'
);
select is(
    (
        select count(*) from jobctl.list_api_tokens()
        where label = 'tap_dash'
    ), 2::bigint, 'both of them'
);
select results_eq(
    $$select tenant_id from jobctl.list_tenant_grants() where role_name = 'tap_dash_role'$$,
    $$values ('tap_dash_a')$$,
    'list_tenant_grants: its tenant''s grants only'
);
select throws_ok($$select * from jobctl.health_checks()$$, '42501', null, 'health_checks: a tenant token is refused');
select throws_ok(
    $$select jobctl.pause_tenant('tap_dash_b')$$, '42501', 'tenant_id: no tenants:write access to tenant tap_dash_b',
    'pause_tenant: another tenant is refused'
);
select throws_ok(
    $$select jobctl.pause_tenant('tap_dash_nobody')$$, '42501', null, 'an unknown tenant too (its existence is not told)'
);
select is(jobctl.pause_tenant('tap_dash_a'), true, 'its own tenant: paused');
select throws_ok(
    $$select jobctl.pause_tenant('tap_dash_a', false)$$, '42501',
    'tenant tap_dash_a may be paused by its own callers, but only an operator resumes it',
    'but not resumed: an operator''s pause holds'
);
select pg_temp.as_token(4);
select throws_ok($$select jobctl.pause_tenant('tap_dash_a')$$, 'JC021', null, 'tenants:read alone may not pause');
select pg_temp.as_token(3);
select ok(
    (
        select count(*) from jobctl.list_tenant_grants()
        where role_name = 'tap_dash_role'
    ) = 2
    and exists (
        select from jobctl.list_api_tokens()
        where tenant_id is null and label = 'tap_dash'
    )
    and exists (select from jobctl.health_checks()),
    'an admin token with tenants:read: every tenant''s grants, admin tokens, health checks'
);
select pg_temp.as_token(null);

select * from finish();
rollback;
