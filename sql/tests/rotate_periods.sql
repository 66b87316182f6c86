-- jobctl._ready, _running and _lane_cache in two period partitions and
-- jobctl._rotate_periods, which moves what is left in a past slot on and truncates it.
begin;
select plan(23);
set local jit = off;

select is(
    (
        select string_agg(c.relname || ' ' || pg_get_expr(c.relpartbound, c.oid), ', ' order by c.relname)
        from pg_inherits as i inner join pg_class as c on i.inhrelid = c.oid
        where i.inhparent = 'jobctl._ready'::regclass
    ),
    '_ready_s0 FOR VALUES IN (''0''), _ready_s1 FOR VALUES IN (''1'')',
    '_ready has two partitions by slot'
);
select is(
    (
        select count(*)::integer from pg_inherits as i inner join pg_class as c on i.inhrelid = c.oid
        where i.inhparent in ('jobctl._ready'::regclass, 'jobctl._running'::regclass) and c.reltoastrelid <> 0
    ),
    0,
    'the partitions of _ready and _running have no TOAST table (a truncation writes fewer pg_class rows)'
);

-- a row goes into the partition of the half-second slot it was written in
create temp table at_insert as select clock_timestamp() as before_insert;
insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at)
values ('tap_rot_q', 'tap_rot_t', 0, now(), -201, now());
select ok(
    (
        select r.tableoid::regclass::text from jobctl._ready as r
        where r.job_id = -201) in (
        select 'jobctl._ready_s' || (floor(extract(epoch from v.t) * 2)::bigint % 2)
        from at_insert as a cross join lateral (values (a.before_insert), (clock_timestamp())) as v (t)
    ),
    'a new row lands in the current slot''s partition'
);

-- the partitions of slot k are named by the time: a moment whose half-second slot (_ready,
-- _running) is k and whose 8-second slot (_lane_cache) is p_cache_slot
create function pg_temp.in_slot(p_slot integer, p_cache_slot integer default 0) returns timestamptz
language sql as $$
    select to_timestamp(floor(extract(epoch from clock_timestamp()) / 16) * 16 + p_cache_slot * 8 + p_slot * 0.5 + 0.25)
$$;
delete from jobctl._ready
where job_id = -201;
truncate jobctl._ready, jobctl._running, jobctl._lane_cache;

-- slot 0 holds a waiting job and a claimed (deleted) one, slot 1 is current
insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at, slot)
values ('tap_rot_q', 'tap_rot_t', 0, now(), -202, now(), 0), ('tap_rot_q', 'tap_rot_t', 0, now(), -203, now(), 0),
('tap_rot_q', 'tap_rot_t', 0, now(), -204, now(), 1);
delete from jobctl._ready
where job_id in (-203, -204);

select is(jobctl._rotate_periods(pg_temp.in_slot(1)), 1, 'the past slot is truncated');
select is(pg_relation_size('jobctl._ready_s0'), 0::bigint, 'the drained slot''s partition is empty on disk');
select isnt(pg_relation_size('jobctl._ready_s1'), 0::bigint, 'the current slot''s is left alone');
select results_eq(
    $$select job_id, tableoid::regclass::text, slot from jobctl._ready where queue = 'tap_rot_q'$$,
    $$values (-202::bigint, 'jobctl._ready_s1'::text, 1::smallint)$$,
    'the waiting job moved on to the current slot'
);
select is(jobctl._rotate_periods(pg_temp.in_slot(1)), 0, 'a second call finds nothing to do');

-- a slot with more than 5,000 waiting jobs is left as it is (moving them would hold claims up)
insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at, slot)
select
    'tap_rot_q' as queue,
    'tap_rot_t' as tenant_id,
    0 as priority,
    now() as run_at,
    -300 - i as job_id,
    now() as created_at,
    0 as slot
from generate_series(1, 5001) as i;
select is(jobctl._rotate_periods(pg_temp.in_slot(1)), 0, 'a slot with 5,001 waiting jobs is not rotated');
select is(
    (
        select count(*)::integer from jobctl._ready
        where queue = 'tap_rot_q' and slot = 0
    ), 5001,
    'and none of them moved'
);
delete from jobctl._ready
where job_id between -5301 and -302;
select is(jobctl._rotate_periods(pg_temp.in_slot(1)), 1, 'with 1 left, it is');
select results_eq(
    $$select job_id, slot from jobctl._ready where queue = 'tap_rot_q' order by job_id$$,
    $$values (-301::bigint, 1::smallint), (-202, 1::smallint)$$,
    'both waiting jobs are in slot 1'
);

-- of the lane cache only each key's newest row moves on, only when the current slot has none newer,
-- and only if a claim used the filter in the last minute
insert into jobctl._lane_cache (queues_key, fresh_until, queues, tenants, limited, lows, total, slot)
values
('tap_rot_key', now(), '{}', '{}', '{}', '{}', 0, 1),
('tap_rot_key', now() + interval '1 second', '{}', '{}', '{}', '{}', 0, 1),
('tap_rot_key2', now(), '{}', '{}', '{}', '{}', 0, 1),
('tap_rot_key2', now() + interval '2 seconds', '{}', '{}', '{}', '{}', 0, 0),
('tap_rot_key3', now() - interval '2 minutes', '{}', '{}', '{}', '{}', 0, 1);
select is(jobctl._rotate_periods(pg_temp.in_slot(0)), 2, 'with slot 0 current, slot 1 of _ready and of the cache are truncated');
select results_eq(
    $$select queues_key, fresh_until - now(), slot from jobctl._lane_cache order by 1$$,
    $$values ('tap_rot_key'::text, interval '1 second', 0::smallint), ('tap_rot_key2', interval '2 seconds', 0::smallint)$$,
    'each key keeps its newest row, moved on when the current slot had none newer; an unused filter''s goes'
);

-- the lane cache's slot lasts 8 seconds: a new half-second leaves it alone
insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at, slot)
values ('tap_rot_q', 'tap_rot_t', 0, now(), -205, now(), 0);
delete from jobctl._ready
where job_id = -205;
select is(jobctl._rotate_periods(pg_temp.in_slot(1)), 1, 'with half-second slot 1 current, only _ready is truncated');
select is(
    (
        select count(*)::integer from jobctl._lane_cache
        where slot = 0
    ), 2,
    'the lane cache, still in its 8-second slot 0, keeps its rows'
);
select is(jobctl._rotate_periods(pg_temp.in_slot(1, 1)), 1, 'in 8-second slot 1 the lane cache is truncated');

-- a running job's lease in a past slot moves on with it: heartbeat and completion find it
create function pg_temp.progress_of(p_table regclass, p_job_id bigint) returns jsonb
language plpgsql as $$
declare
    v_progress jsonb;
begin
    execute format('select progress from %s where job_id = $1', p_table) into v_progress using p_job_id;
    return v_progress;
end
$$;
select jobctl.put_tenant('tap_rot_t');
insert into jobctl.job (
    job_id, created_at, tenant_id, queue, state, run_at, attempt, max_attempts, payload,
    lease_epoch, worker_id, started_at
)
values (-401, now(), 'tap_rot_t', 'tap_rot_q', 'running', now(), 1, 3, '{}', -401, 'tap_rot_w', now());
insert into jobctl._running (
    job_id, created_at, tenant_id, queue, attempt, lease_epoch, worker_id, started_at,
    lease_expires_at, slot, progress
)
values (
    -401, now(), 'tap_rot_t', 'tap_rot_q', 1, -401, 'tap_rot_w', now(), now() + interval '1 minute', 1,
    '{"done": 1, "total": 2}'
);
select is(jobctl._rotate_periods(pg_temp.in_slot(0)) > 0, true, 'with slot 0 current, slot 1 is rotated');
select results_eq(
    $$select tableoid::regclass::text, lease_epoch from jobctl._running where job_id = -401$$,
    $$values ('jobctl._running_s0'::text, -401::bigint)$$,
    'the lease moved on to the current slot with its epoch'
);
select is(
    (select pg_temp.progress_of('jobctl._running', -401)), '{"done": 1, "total": 2}'::jsonb,
    'its progress moved on with it'
);
select is(jobctl.heartbeat(-401, -401), 'ok', 'its heartbeat finds it');
select ok(jobctl.complete_job(-401, -401), 'and so does its completion');
select is(
    (select pg_temp.progress_of('jobctl.job', -401)), '{"done": 1, "total": 2}'::jsonb,
    'which leaves the progress on the job'
);

select * from finish();
rollback;
