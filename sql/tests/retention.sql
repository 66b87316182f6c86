-- Retention by partitions (jobctl.maintain_partitions): a day past the hot
-- retention leaves jobctl.job as a whole partition, detached by pg_partman and attached to
-- jobctl.job_archive; its unfinished jobs are carried over into the hot default partition and go
-- on; the archive stays readable until its own retention drops it.
begin;
select plan(41);
set local jit = off;

select results_eq(
    $$select hot, archive from jobctl.retention$$,
    $$values (interval '7 days', interval '90 days')$$,
    'hot data is kept 7 days, the archive 90'
);
select results_eq(
    $$select parent_table, retention, retention_keep_table, retention_schema, automatic_maintenance
      from partman.part_config where parent_table in ('jobctl.job', 'jobctl._event') order by 1$$,
    $$values ('jobctl._event'::text, '7 days'::text, true, 'jobctl_archive'::text, 'off'::text),
             ('jobctl.job', '7 days', true, 'jobctl_archive', 'off')$$,
    'pg_partman detaches past the retention into jobctl_archive, only when maintain_partitions asks'
);

-- a day that is over is sealed: a CHECK constraint on its bounds, added, then validated by a later
-- call (one step on hot tables a call)
select results_eq(
    $$select count(*) filter (where r = 1) from (select jobctl.maintain_partitions() as r from generate_series(1, 40)) as x$$,
    $$values (40::bigint)$$,
    'forty calls in a row all run their step'
);
select is_empty(
    $$select part from jobctl._partitions(array['jobctl.job', 'jobctl._event']::regclass[])
      where upper_bound <= now() and sealed is distinct from true$$,
    'every partition whose day is over carries a validated bound constraint'
);
select is_empty(
    $$select part from jobctl._partitions(array['jobctl.job', 'jobctl._event']::regclass[])
      where upper_bound > now() and sealed is not null$$,
    'today''s and later partitions are not sealed'
);

-- jobs of three days ago: completed (with an event), pending, delayed 30 days ahead, running
select jobctl.put_tenant('tap_ret_t');
insert into jobctl.job (
    job_id, created_at, tenant_id, queue, state, run_at, attempt, max_attempts, payload, finished_at,
    lease_epoch, worker_id, started_at
)
values
(
    -101, now() - interval '3 days', 'tap_ret_t', 'tap_ret_q', 'completed', now() - interval '3 days', 1, 3, '{}',
    now() - interval '3 days', null, null, null
),
(
    -102, now() - interval '3 days', 'tap_ret_t', 'tap_ret_q', 'pending', now() - interval '3 days', 0, 3, '{}',
    null, null, null, null
),
(
    -103, now() - interval '3 days', 'tap_ret_t', 'tap_ret_q', 'pending', now() + interval '30 days', 0, 3, '{}',
    null, null, null, null
),
(
    -104, now() - interval '3 days', 'tap_ret_t', 'tap_ret_q', 'running', now() - interval '3 days', 1, 3, '{}',
    null, nextval('jobctl.lease_epoch_seq'), 'tap_ret_w', now()
);
insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at)
select
    j.queue,
    j.tenant_id,
    j.priority,
    j.run_at,
    j.job_id,
    j.created_at
from jobctl.job as j
where j.job_id = -102;
insert into jobctl._delayed (run_at, job_id, created_at, queue, tenant_id, priority)
select
    j.run_at,
    j.job_id,
    j.created_at,
    j.queue,
    j.tenant_id,
    j.priority
from jobctl.job as j
where j.job_id = -103;
insert into jobctl._running (
    job_id, created_at, tenant_id, queue, attempt, lease_epoch, worker_id, started_at, lease_expires_at
)
select
    j.job_id,
    j.created_at,
    j.tenant_id,
    j.queue,
    j.attempt,
    j.lease_epoch,
    j.worker_id,
    now() as started_at,
    now() + interval '1 hour' as lease_expires_at
from jobctl.job as j
where j.job_id = -104;
insert into jobctl._event (job_id, job_created_at, at, event, attempt, detail)
values (-101, now() - interval '3 days', now() - interval '3 days', 'failed', 1, 'tap_ret first try');
-- a job retried after maintain_partitions read the queue tables (simulated: pending with a
-- 'retried' event, its _ready row not there yet): found by its event
insert into jobctl.job (job_id, created_at, tenant_id, queue, state, run_at, attempt, max_attempts, payload)
values (-105, now() - interval '3 days', 'tap_ret_t', 'tap_ret_q', 'pending', now(), 1, 3, '{}');
insert into jobctl._event (job_id, job_created_at, at, event, attempt)
values (-105, now() - interval '3 days', now(), 'retried', 1);

-- saved steps (docs/durable.md): of the completed job, and of the delayed one, as a parked job's
insert into jobctl._step (job_id, step, job_created_at, tenant_id, attempt, lease_epoch)
values (-101, 'tap_ret done', now() - interval '3 days', 'tap_ret_t', 1, 1),
(-103, 'tap_ret kept', now() - interval '3 days', 'tap_ret_t', 1, 1);

create temp table old_day as
select
    p.part::text as job_part,
    'jobctl_archive.' || split_part(p.part::text, '.', 2) as archived_part,
    p.lower_bound,
    e.part::text as event_part
from jobctl._partitions(array['jobctl.job']::regclass[]) as p
inner join jobctl._partitions(array['jobctl._event']::regclass[]) as e on e.lower_bound = p.lower_bound
where now() - interval '3 days' >= p.lower_bound and now() - interval '3 days' < p.upper_bound;

-- wait out any other maintain_partitions (pg_cron's every 15 minutes, another suite's): this
-- transaction then holds the maintain lock, and the calls below never find it busy
select name from jobctl._lock
where name = 'maintain' and bucket = 0 for update;

-- one day of hot retention: that day (and the days before it) leave jobctl.job
update jobctl.retention set hot = '1 day';
select is(jobctl.maintain_partitions(), 1, 'maintain_partitions ran every step');
select results_eq(
    $$select i.inhparent::regclass::text, c.relnamespace::regnamespace::text
      from pg_inherits as i inner join pg_class as c on i.inhrelid = c.oid
      where c.relname = (select split_part(job_part, '.', 2) from old_day)$$,
    $$values ('jobctl.job_archive', 'jobctl_archive')$$,
    'the day''s job partition is now a partition of jobctl.job_archive, in schema jobctl_archive'
);
select results_eq(
    $$select i.inhparent::regclass::text
      from pg_inherits as i inner join pg_class as c on i.inhrelid = c.oid
      where c.relname = (select split_part(event_part, '.', 2) from old_day)$$,
    $$values ('jobctl._event_archive')$$,
    'and its event partition one of jobctl._event_archive'
);
select is_empty(
    $$select part from jobctl._partitions(array['jobctl.job', 'jobctl._event']::regclass[])
      where upper_bound < now() - interval '1 day'$$,
    'no hot partition is older than the hot retention'
);
select ok(
    exists (
        select from jobctl._partitions(array['jobctl.job']::regclass[])
        where now() + interval '3 days' >= lower_bound and now() + interval '3 days' < upper_bound
    ),
    'partitions ahead are still made'
);

-- the finished job is in the archive and still readable
select results_eq(
    $$select tableoid::regclass::text from jobctl.job_archive where job_id = -101$$,
    $$select archived_part from old_day$$,
    'the completed job moved with its partition'
);
select is_empty($$select from jobctl.job where job_id = -101$$, 'and is no longer in the hot table');
select results_eq(
    $$select job_id, state from jobctl.get_job(-101)$$, $$values (-101::bigint, 'completed'::text)$$,
    'get_job reads it from the archive'
);
select results_eq(
    $$select job_id from jobctl.list_jobs('tap_ret_t')$$,
    $$values (-101::bigint), (-102), (-103), (-104), (-105)$$,
    'list_jobs lists hot and archived jobs together, newest first'
);
select results_eq(
    $$select event, detail from jobctl.job_history(-101) where event = 'failed'$$,
    $$values ('failed'::text, 'tap_ret first try'::text)$$,
    'job_history reads its events from the event archive'
);
select throws_ok($$select jobctl.cancel_job(-101)$$, 'JC010', null, 'an archived job cannot be cancelled');
select throws_ok($$select jobctl.retry_job(-101)$$, 'JC010', null, 'nor retried');

-- the unfinished jobs were carried over, with their queue and lease rows untouched
select results_eq(
    $$select job_id, tableoid::regclass::text, state from jobctl.job where tenant_id = 'tap_ret_t' order by 1 desc$$,
    $$values (-102::bigint, 'jobctl.job_default'::text, 'pending'::text), (-103, 'jobctl.job_default', 'pending'),
             (-104, 'jobctl.job_default', 'running'), (-105, 'jobctl.job_default', 'pending')$$,
    'the pending, delayed, running and just retried jobs are in the hot default partition'
);
select is_empty(
    $$select from jobctl.job_archive where job_id in (-102, -103, -104, -105)$$,
    'and not in the archive'
);
select is((
    select count(*)::integer from jobctl._ready
    where job_id = -102
), 1, 'the pending job is still due');
select is((
    select count(*)::integer from jobctl._delayed
    where job_id = -103
), 1, 'the delayed one still waits');
select is(
    jobctl.heartbeat(-104, (
        select lease_epoch from jobctl.job
        where job_id = -104
    )), 'ok',
    'the running job''s lease is still good'
);

-- they go on: the pending one is claimed and completed, the running one fails and is retried
create temp table claimed as
select
    c.job_id,
    c.lease_epoch
from jobctl.claim_job('tap_ret_w', array['tap_ret_q'], 5) as c;
select results_eq($$select job_id from claimed$$, $$values (-102::bigint)$$, 'the carried-over job is claimed');
select ok(
    jobctl.complete_job(-102, (
        select lease_epoch from claimed
        where job_id = -102
    )), 'and completed'
);
select is(
    jobctl.fail_job(-104, (
        select lease_epoch from jobctl.job
        where job_id = -104
    ), 'tap_ret boom'),
    'failed', 'the running one fails with a retry'
);
select is(
    (
        select tableoid::regclass::text from jobctl._event
        where job_id = -104 and event = 'failed'
    ),
    'jobctl._event_default', 'its event lands in the hot default event partition'
);
select is(jobctl.cancel_job(-104), 'cancelled', 'and it can be cancelled: it is hot');

-- finished since: the next run moves them to the archive, with their events
select is(jobctl.maintain_partitions(), 1, 'maintain_partitions ran again');
select results_eq(
    $$select job_id, tableoid::regclass::text, state from jobctl.job_archive where job_id in (-102, -104) order by 1 desc$$,
    $$select -102::bigint, archived_part, 'completed'::text from old_day
      union all select -104, archived_part, 'cancelled' from old_day$$,
    'the carried-over jobs that finished went to their day''s archive partition'
);
select is_empty($$select from jobctl.job where job_id in (-102, -104)$$, 'and left the hot table');
select is_empty($$select from jobctl._event where job_id = -104$$, 'their events left the hot event table');
select results_eq(
    $$select event from jobctl.job_history(-104) where event in ('failed', 'cancelled') order by at$$,
    $$values ('failed'::text), ('cancelled')$$,
    'and are read from the event archive'
);
select results_eq(
    $$select job_id, tableoid::regclass::text from jobctl.job where tenant_id = 'tap_ret_t' order by 1 desc$$,
    $$values (-103::bigint, 'jobctl.job_default'::text), (-105, 'jobctl.job_default')$$,
    'the delayed job stays hot until it finishes'
);

select results_eq(
    $$select job_id, step from jobctl._step where tenant_id = 'tap_ret_t' order by job_id$$,
    $$values (-103::bigint, 'tap_ret kept'::text)$$,
    'the archived job''s steps are gone (jobctl._expire_durable), the carried-over one''s stay'
);
select is(
    (select count(*)::int from jobctl.job_steps(-103)), 1, 'and job_steps reads them'
);

-- the archive's retention drops whole archive partitions
update jobctl.retention set archive = '2 days';
select is(jobctl.maintain_partitions(), 1, 'maintain_partitions ran with a two-day archive');
select is_empty(
    $$select part from jobctl._partitions(array['jobctl.job_archive', 'jobctl._event_archive']::regclass[])
      where upper_bound < now() - interval '2 days'$$,
    'archive partitions past the archive retention are dropped'
);
select is_empty($$select from jobctl.get_job(-101)$$, 'and their jobs are gone');
select is(to_regclass((select archived_part from old_day)), null, 'the day''s table no longer exists');

select throws_ok(
    $$update jobctl.retention set hot = '1 hour'$$, '23514', null, 'the hot retention is at least a day'
);
select throws_ok(
    $$update jobctl.retention set archive = '12 hours', hot = '1 day'$$, '23514', null,
    'and the archive at least as long'
);

select * from finish();
rollback;
