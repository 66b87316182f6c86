-- 0009_ready_slots: jobctl._ready becomes four partitions taken in turn, one second each.
-- Immutable once landed: later changes go into a new numbered migration.
--
-- Claims delete from the head of each lane; until VACUUM removes them, the dead index entries stay
-- there and every claim of the lane walks them, and while any snapshot older than them is open
-- (a long report, a forgotten BEGIN) VACUUM cannot remove them at all: in 20 s of a held
-- REPEATABLE READ transaction at 5,700 jobs/s, claim p50 went from 6 to 53 ms
-- (benchmarks/held_snapshot.py). TRUNCATE frees a table whatever snapshots are open. So a row goes
-- into the partition of the 1-second slot it was written in (`slot`, a default: no writer names
-- it), and jobctl._rotate_slots truncates each other partition once it is drained: the dead
-- entries a claim can meet are those of the last slots, not of the whole hold.
alter table jobctl._ready rename to _ready_0008;
alter index jobctl._ready_lane_idx rename to _ready_0008_lane_idx;

create table jobctl._ready (
    queue text not null,
    tenant_id text not null,
    priority smallint not null,
    run_at timestamptz not null,
    job_id bigint not null,
    created_at timestamptz not null,
    -- the 1-second slice of time the row was written in, of 4 taken in turn (see jobctl._rotate_slots)
    slot smallint not null default (floor(extract(epoch from clock_timestamp()))::bigint % 4)::smallint
) partition by list (slot);

do $$
begin
    for v_slot in 0 .. 3 loop
        execute format(
            'create table jobctl._ready_s%s partition of jobctl._ready for values in (%s) with (
                 autovacuum_vacuum_scale_factor = 0,
                 autovacuum_vacuum_threshold = 2000,
                 autovacuum_vacuum_insert_scale_factor = 0,
                 autovacuum_vacuum_insert_threshold = 10000,
                 autovacuum_vacuum_cost_delay = 0
             )', v_slot, v_slot
        );
    end loop;
end
$$;

create index _ready_lane_idx on jobctl._ready (queue, tenant_id, priority desc, run_at, job_id);

insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at)
select
    r.queue,
    r.tenant_id,
    r.priority,
    r.run_at,
    r.job_id,
    r.created_at
from jobctl._ready_0008 as r;
drop table jobctl._ready_0008;
