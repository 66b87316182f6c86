-- jobctl.maintain_partitions: pg_partman maintenance for jobctl.job and jobctl._event under a short
-- lock_timeout; returns 1 when it ran, 0 when skipped. Daily partitions exist ahead of time.
begin;
select plan(15);
-- the tests join temp tables that have no statistics: keep JIT from compiling those plans
set local jit = off;
\ir helpers.psql

select has_function('jobctl', 'maintain_partitions', array[]::text[], 'maintain_partitions() exists');
select function_returns('jobctl', 'maintain_partitions', array[]::text[], 'integer', 'it returns integer');
select isnt(
    obj_description('jobctl.maintain_partitions()'::regprocedure), null, 'maintain_partitions has a comment'
);

-- whether a non-default partition of p_parent holds p_at
create function pg_temp.covered(p_parent regclass, p_at timestamptz) returns boolean
language sql as $$
    select exists (
        select
        from pg_inherits as i
        inner join pg_class as c on i.inhrelid = c.oid
        cross join lateral regexp_match(
            pg_get_expr(c.relpartbound, c.oid), 'FROM \(''([^'']+)''\) TO \(''([^'']+)''\)'
        ) as b (bound)
        where i.inhparent = p_parent and p_at >= b.bound[1]::timestamptz and p_at < b.bound[2]::timestamptz
    )
$$;

select results_eq(
    $$select parent_table, partition_interval from partman.part_config
      where parent_table in ('jobctl.job', 'jobctl._event') order by 1$$,
    $$values ('jobctl._event'::text, '1 day'::text), ('jobctl.job', '1 day')$$,
    'pg_partman manages jobctl.job and jobctl._event in daily partitions'
);

create temp table before_call as
select current_setting('lock_timeout') as lock_timeout;
create temp table ran as
select jobctl.maintain_partitions() as result;
select ok((select result in (0, 1) from ran), 'maintain_partitions() returns 0 (skipped) or 1 (ran)');
select lives_ok($$select jobctl.maintain_partitions()$$, 'running it again is harmless');

select ok(pg_temp.covered('jobctl.job', now()), 'jobctl.job has a partition for today');
select ok(pg_temp.covered('jobctl.job', now() + interval '3 days'), 'jobctl.job has a partition three days ahead');
select ok(pg_temp.covered('jobctl._event', now()), 'jobctl._event has a partition for today');
select ok(
    pg_temp.covered('jobctl._event', now() + interval '3 days'), 'jobctl._event has a partition three days ahead'
);

-- fillfactor 50: on every job partition, and on one pg_partman makes from now on
select is_empty(
    $$select i.inhrelid::regclass from pg_inherits as i inner join pg_class as c on i.inhrelid = c.oid
      where i.inhparent = 'jobctl.job'::regclass and not coalesce('fillfactor=50' = any(c.reloptions), false)$$,
    'every job partition has fillfactor 50'
);
select ok(
    partman.create_partition_time('jobctl.job', array[now() + interval '40 days']),
    'pg_partman makes a job partition 40 days ahead'
);
select is_empty(
    $$select i.inhrelid::regclass from pg_inherits as i inner join pg_class as c on i.inhrelid = c.oid
      where i.inhparent = 'jobctl.job'::regclass and not coalesce('fillfactor=50' = any(c.reloptions), false)$$,
    'the new partition has fillfactor 50 too'
);

-- pg_cron runs it every 15 minutes (when pg_cron is installed in this database)
select
    case
        when to_regclass('cron.job') is null then skip('pg_cron is not installed in this database', 1)
        else is(
            pg_temp.cron_job('jobctl-partitions'), '*/15 * * * * SELECT jobctl.maintain_partitions()',
            'pg_cron runs maintain_partitions() every 15 minutes'
        )
    end;

-- the 50 ms lock_timeout is meant for the maintenance run only
select is(
    current_setting('lock_timeout'), (select lock_timeout from before_call),
    'the caller''s lock_timeout is unchanged after maintain_partitions()'
);

select * from finish();
rollback;
