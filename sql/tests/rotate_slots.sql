-- jobctl._ready and jobctl._running in four slot partitions (migrations 0009, 0010) and
-- jobctl._rotate_slots, which moves what is left in a past slot on and truncates it.
begin;
select plan(14);
set local jit = off;

select is(
    (
        select string_agg(c.relname || ' ' || pg_get_expr(c.relpartbound, c.oid), ', ' order by c.relname)
        from pg_inherits as i inner join pg_class as c on i.inhrelid = c.oid
        where i.inhparent = 'jobctl._ready'::regclass
    ),
    '_ready_s0 FOR VALUES IN (''0''), _ready_s1 FOR VALUES IN (''1''), _ready_s2 FOR VALUES IN (''2''), '
    || '_ready_s3 FOR VALUES IN (''3'')',
    '_ready has four partitions by slot'
);

-- a row goes into the partition of the 1-second slot it was written in
create temp table at_insert as select clock_timestamp() as before_insert;
insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at)
values ('tap_rot_q', 'tap_rot_t', 0, now(), -201, now());
select ok(
    (
        select r.tableoid::regclass::text from jobctl._ready as r
        where r.job_id = -201) in (
        select 'jobctl._ready_s' || (floor(extract(epoch from v.t))::bigint % 4)
        from at_insert as a cross join lateral (values (a.before_insert), (clock_timestamp())) as v (t)
    ),
    'a new row lands in the current slot''s partition'
);

-- the partitions of slot k are named by the time: a moment whose slot is k
create function pg_temp.in_slot(p_slot integer) returns timestamptz
language sql as $$
    select to_timestamp((floor(extract(epoch from clock_timestamp()) / 4) * 4) + p_slot + 0.5)
$$;
delete from jobctl._ready
where job_id = -201;
truncate jobctl._ready, jobctl._running;

-- slot 2 holds a waiting job, slot 3 only a claimed (deleted) one, slot 1 is current
insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at, slot)
values ('tap_rot_q', 'tap_rot_t', 0, now(), -202, now(), 2), ('tap_rot_q', 'tap_rot_t', 0, now(), -203, now(), 3),
('tap_rot_q', 'tap_rot_t', 0, now(), -204, now(), 1);
delete from jobctl._ready
where job_id in (-203, -204);

select is(jobctl._rotate_slots(pg_temp.in_slot(1)), 2, 'both other slots with storage are truncated');
select is(pg_relation_size('jobctl._ready_s3'), 0::bigint, 'the drained slot''s partition is empty on disk');
select isnt(pg_relation_size('jobctl._ready_s1'), 0::bigint, 'the current slot''s is left alone');
select results_eq(
    $$select job_id, tableoid::regclass::text, slot from jobctl._ready where queue = 'tap_rot_q'$$,
    $$values (-202::bigint, 'jobctl._ready_s1'::text, 1::smallint)$$,
    'the waiting job moved on to the current slot'
);
select is(jobctl._rotate_slots(pg_temp.in_slot(1)), 0, 'a second call finds nothing to do');

-- a slot with more than 5,000 waiting jobs is left alone (moving them would hold claims up)
insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at, slot)
select
    'tap_rot_q' as queue,
    'tap_rot_t' as tenant_id,
    0 as priority,
    now() as run_at,
    -300 - i as job_id,
    now() as created_at,
    3 as slot
from generate_series(1, 5001) as i;
select is(jobctl._rotate_slots(pg_temp.in_slot(1)), 0, 'a slot with 5,001 waiting jobs is not rotated');
delete from jobctl._ready
where job_id between -5300 and -301;
select is(jobctl._rotate_slots(pg_temp.in_slot(2)), 2, 'with 1 left, it is (and slot 1, now past)');
select is(
    (
        select count(*)::integer from jobctl._ready
        where queue = 'tap_rot_q' and slot = 2
    ), 2,
    'both waiting jobs are in slot 2'
);

-- a running job's lease in a past slot moves on with it: heartbeat and completion find it
select jobctl.put_tenant('tap_rot_t');
insert into jobctl.job (
    job_id, created_at, tenant_id, queue, state, run_at, attempt, max_attempts, payload,
    lease_epoch, worker_id, started_at
)
values (-401, now(), 'tap_rot_t', 'tap_rot_q', 'running', now(), 1, 3, '{}', -401, 'tap_rot_w', now());
insert into jobctl._running (
    job_id, created_at, tenant_id, queue, attempt, lease_epoch, worker_id, started_at,
    lease_expires_at, slot
)
values (-401, now(), 'tap_rot_t', 'tap_rot_q', 1, -401, 'tap_rot_w', now(), now() + interval '1 minute', 0);
select is(jobctl._rotate_slots(pg_temp.in_slot(3)) > 0, true, 'with slot 3 current, slot 0 is rotated');
select results_eq(
    $$select tableoid::regclass::text, lease_epoch from jobctl._running where job_id = -401$$,
    $$values ('jobctl._running_s3'::text, -401::bigint)$$,
    'the lease moved on to the current slot with its epoch'
);
select is(jobctl.heartbeat(-401, -401), 'ok', 'its heartbeat finds it');
select ok(jobctl.complete_job(-401, -401), 'and so does its completion');

select * from finish();
rollback;
