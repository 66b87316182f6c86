-- 0010_running_slots: jobctl._running, like _ready (0009), becomes four partitions taken in turn.
-- Immutable once landed: later changes go into a new numbered migration.
--
-- A lease row is inserted by each claim and deleted by each completion, so while an old snapshot
-- is held its dead rows pile up, and the reaper's once-a-second look at _running walks them all.
-- A lease goes into the partition of the 1-second slot it was written in, and jobctl._rotate_slots
-- moves the leases still running in a past slot on to the current one and truncates it. The
-- primary key must contain the partition key: (job_id, slot); lookups by job_id use its prefix.
alter table jobctl._running rename to _running_0009;
alter table jobctl._running_0009 rename constraint _running_pkey to _running_0009_pkey;
alter index jobctl._running_tenant_idx rename to _running_0009_tenant_idx;

create table jobctl._running (
    job_id bigint not null,
    created_at timestamptz not null,
    tenant_id text not null,
    queue text not null,
    attempt integer not null,
    lease_epoch bigint not null,
    worker_id text not null,
    started_at timestamptz not null,
    lease_expires_at timestamptz not null,
    deadline timestamptz,
    -- the 1-second slice of time the row was written in, of 4 taken in turn (see jobctl._rotate_slots)
    slot smallint not null default (floor(extract(epoch from clock_timestamp()))::bigint % 4)::smallint,
    constraint _running_pkey primary key (job_id, slot)
) partition by list (slot);

do $$
begin
    for v_slot in 0 .. 3 loop
        execute format(
            'create table jobctl._running_s%s partition of jobctl._running for values in (%s) with (
                 fillfactor = 50,
                 autovacuum_vacuum_scale_factor = 0,
                 autovacuum_vacuum_threshold = 2000,
                 autovacuum_vacuum_cost_delay = 0
             )', v_slot, v_slot
        );
    end loop;
end
$$;

create index _running_tenant_idx on jobctl._running (tenant_id);

insert into jobctl._running (
    job_id, created_at, tenant_id, queue, attempt, lease_epoch, worker_id, started_at, lease_expires_at, deadline
)
select
    r.job_id,
    r.created_at,
    r.tenant_id,
    r.queue,
    r.attempt,
    r.lease_epoch,
    r.worker_id,
    r.started_at,
    r.lease_expires_at,
    r.deadline
from jobctl._running_0009 as r;

-- the view reads the new table (it names the old one by its oid)
create or replace view jobctl._job_view as
select
    j.job_id,
    j.tenant_id,
    j.queue,
    j.state,
    j.priority::integer as priority,
    j.payload,
    j.run_at,
    j.attempt,
    j.max_attempts,
    j.dedup_key,
    j.created_at,
    j.started_at,
    j.finished_at,
    j.last_error,
    j.result,
    j.worker_id,
    r.lease_expires_at,
    j.lease_epoch,
    j.timeout,
    j.backoff
from (
    select * from jobctl.job
    union all
    select * from jobctl.job_archive
) as j
left join jobctl._running as r on r.job_id = j.job_id and r.lease_epoch = j.lease_epoch;

drop table jobctl._running_0009;
