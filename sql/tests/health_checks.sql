-- jobctl.health_checks: what `jobctl doctor` prints, one row per check with a verdict in (ok, warn,
-- fail). The reaper-lag check moves a tap lease into the past (inside this transaction); the
-- default-partition check gets a row from 2100. Tenant tap_health_t, queue tap_health_q.
begin;
select plan(25);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;

select has_function('jobctl', 'health_checks', array[]::text[], 'health_checks() exists');
select function_returns('jobctl', 'health_checks', array[]::text[], 'setof record', 'it returns a set of rows');

-- the reaper runs alone (a try-lock): wait for pg_cron's ticker to finish its pass, keep it out of
-- this transaction, and reap whatever expired before, so that only the tap lease below is late
-- wait for any other reaper (pg_cron's tick) to finish and keep it out of this transaction
select name from jobctl._lock
where name = 'reap' and bucket = 0 for update;
select lives_ok($$select jobctl.reap_expired_leases()$$, 'leases that expired before the test are reaped');

create temp table h0 as
select
    c.ord,
    c.check_name,
    c.verdict,
    c.observed,
    c.detail
from jobctl.health_checks() with ordinality as c (check_name, verdict, observed, detail, ord);

-- the checks, in order; the pg_cron ones only when pg_cron is in this database
select results_eq(
    $$select check_name from h0 order by ord$$,
    $$select x.name from unnest(array[
            'extension pg_partman', 'extension pg_cron', 'pg_cron launcher', 'cron job jobctl-tick',
            'cron job jobctl-partitions', 'cron job jobctl-cron-history', 'reaper lag', 'dead tuples _delayed',
            'bloat _delayed', 'dead tuples _lane_cache', 'bloat _lane_cache', 'dead tuples _ready', 'bloat _ready',
            'dead tuples _running', 'bloat _running', 'transaction ID age',
            'oldest snapshot', 'partitions ahead jobctl.job', 'partitions ahead jobctl._event',
            'default partition rows', 'notification queue', 'privileges', 'database access'
        ]) with ordinality as x (name, ord)
      where x.name !~ '^(pg_cron launcher|cron job )' or exists (select from pg_extension where extname = 'pg_cron')
      order by x.ord$$,
    'the expected checks, in order (the pg_cron ones when pg_cron is in this database)'
);
select is_empty(
    $$select check_name, verdict from h0 where verdict is null or verdict not in ('ok', 'warn', 'fail')$$,
    'every verdict is ok, warn or fail (listed: the others)'
);
select is_empty(
    $$select check_name from h0 where observed is null$$, 'every check says what it observed (listed: the ones that do not)'
);
select is_empty(
    $$select check_name, verdict, detail from h0 where (verdict = 'ok') <> (detail is null)$$,
    'a detail exactly when the verdict is not ok (listed: the others)'
);
select results_eq(
    $$select verdict, observed from h0 where check_name = 'extension pg_partman'$$,
    $$select 'ok', extversion collate "default" from pg_extension where extname = 'pg_partman'$$,
    'pg_partman: ok, with its version'
);
select results_eq(
    $$select verdict, observed from h0 where check_name = 'default partition rows'$$,
    $$values ('ok', '0 recent rows in jobctl.job_default')$$,
    'no rows in the default partition: ok'
);
select results_eq(
    $$select verdict, observed from h0 where check_name = 'reaper lag'$$,
    $$values ('ok', '0 expired leases, oldest 0 s ago')$$,
    'no expired lease: reaper lag ok'
);

-- a running tap job whose lease expired 25 s, 45 s, then 2 minutes ago
do $do$
begin
    perform jobctl.submit_job('tap_health_t', 'tap_health_q', '{}');
end
$do$;
create temp table c as
select * from jobctl.claim_job('tap_health_w', array['tap_health_q']);
create function pg_temp.lease_expired(p_ago interval) returns table (verdict text, observed text)
language sql as $$
    update jobctl._running set lease_expires_at = now() - p_ago where job_id = (select job_id from c);
    select h.verdict, h.observed from jobctl.health_checks() as h where h.check_name = 'reaper lag';
$$;
select results_eq(
    $$select * from pg_temp.lease_expired('25 seconds')$$,
    $$values ('ok', '1 expired leases, oldest 25 s ago')$$,
    'a lease expired 25 s ago: ok (the reaper may not have run yet)'
);
select results_eq(
    $$select * from pg_temp.lease_expired('45 seconds')$$,
    $$values ('warn', '1 expired leases, oldest 45 s ago')$$,
    'a lease expired 45 s ago: warn'
);
select results_eq(
    $$select * from pg_temp.lease_expired('2 minutes')$$,
    $$values ('fail', '1 expired leases, oldest 120 s ago')$$,
    'a lease expired 2 minutes ago: fail'
);
select results_eq(
    $$select detail is not null from jobctl.health_checks() where check_name = 'reaper lag'$$, $$values (true)$$,
    'and a detail says what to look at'
);

-- a job row past the last partition lands in the default partition: warn
insert into jobctl.job (created_at, tenant_id, queue, run_at, max_attempts, payload)
values ('2100-01-01 00:00:00+00', 'tap_health_t', 'tap_health_q', '2100-01-01 00:00:00+00', 1, '{}');
select results_eq(
    $$select verdict, observed from jobctl.health_checks() where check_name = 'default partition rows'$$,
    $$values ('warn', '1 recent rows in jobctl.job_default')$$,
    'a row in the default partition: warn'
);
-- a job carried over past its day (older than the hot retention) belongs there: no warning for it
insert into jobctl.job (created_at, tenant_id, queue, run_at, max_attempts, payload)
values (now() - interval '30 days', 'tap_health_t', 'tap_health_q', now(), 1, '{}');
select results_eq(
    $$select observed from jobctl.health_checks() where check_name = 'default partition rows'$$,
    $$values ('1 recent rows in jobctl.job_default')$$,
    'a job carried over past the hot retention is not counted'
);

select results_eq(
    $$select observed ~ '^partitions up to \d{4}-\d{2}-\d{2}$' from h0 where check_name like 'partitions ahead %'$$,
    $$values (true), (true)$$,
    'partitions ahead: the date of the last partition'
);

select results_eq(
    $$select verdict, observed from h0 where check_name = 'privileges'$$,
    $$values ('ok', '0 functions executable by PUBLIC, 0 readers bypassing row-level security, 0 grants of dropped roles')$$,
    'privileges: as sql/grants.sql made them'
);
grant execute on function jobctl.get_job(bigint) to public;
select results_eq(
    $$select verdict, detail ~ 'jobctl migrate' from jobctl.health_checks() where check_name = 'privileges'$$,
    $$values ('fail', true)$$,
    'a function opened to PUBLIC by hand fails the privileges check'
);

-- database access: what a superuser's migrate makes (sql/grants.sql); the cluster's other databases
-- may be open to PUBLIC (a test's scratch database): that only warns, naming them
select results_eq(
    $$select verdict <> 'fail', observed ~ '^PUBLIC may not connect here, 0 advisory lock functions executable by PUBLIC, '
        from h0 where check_name = 'database access'$$,
    $$values (true, true)$$,
    'database access: closed to PUBLIC, as sql/grants.sql made it'
);
grant connect on database template1 to public;
select results_eq(
    $$select verdict, observed ~ 'other databases open to PUBLIC: .*template1', detail ~ 'revoke connect on database .*template1'
        from jobctl.health_checks() where check_name = 'database access'$$,
    $$values ('warn', true, true)$$,
    'another database of the cluster open to PUBLIC warns, naming it'
);
grant execute on function pg_catalog.pg_advisory_lock(bigint) to public;
select results_eq(
    $$select verdict, observed ~ ', 1 advisory lock functions executable by PUBLIC', detail ~ 'run jobctl migrate as a superuser'
        from jobctl.health_checks() where check_name = 'database access'$$,
    $$values ('fail', true, true)$$,
    'an advisory lock function opened to PUBLIC fails the check'
);
revoke execute on function pg_catalog.pg_advisory_lock(bigint) from public;
do $$ begin execute format('grant temporary on database %I to public', current_database()); end $$;
select results_eq(
    $$select verdict, observed ~ '^PUBLIC may connect or make temporary tables here'
        from jobctl.health_checks() where check_name = 'database access'$$,
    $$values ('fail', true)$$,
    'the database opened to PUBLIC fails the check'
);

select is_empty(
    $$select check_name from jobctl.health_checks()
    where check_name like 'bloat %' and observed !~ '^heap \S+( \S+)?(; live rows not measured yet \(table not analyzed\)| for \S+( \S+)? of live rows \(estimate\))$'$$,
    'a bloat check reads as a sentence, analyzed or not (doctor)'
);

select isnt(obj_description('jobctl.health_checks()'::regprocedure), null, 'health_checks has a comment');

select * from finish();
rollback;
