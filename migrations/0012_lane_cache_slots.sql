-- 0012_lane_cache_slots: the lane cache is written, not updated: one row per refresh, in two
-- partitions by the 1-second slot a row was written in, the past one truncated by
-- jobctl._rotate_slots. Immutable once landed: later changes go into a new numbered migration.
--
-- One row per queue filter updated up to ten times a second keeps, under an old snapshot, every
-- version the snapshot might see: in 10 minutes of a held REPEATABLE READ transaction it grew from
-- 0.03 to 1.81 MB, and every claim reads it (benchmarks/held_snapshot.py). Rows that are only
-- inserted leave nothing dead, a reader's descent of (queues_key, fresh_until desc) lands on the
-- newest row first, and the truncation frees the old ones whatever snapshots are open.
drop table jobctl._lane_cache;

create table jobctl._lane_cache (
    queues_key text not null,
    fresh_until timestamptz not null,
    queues text[] not null,
    tenants text[] not null,
    limited boolean[] not null,
    lows float8[] not null,
    total float8 not null,
    -- the 1-second slice of time the row was written in, of 2 taken in turn (see jobctl._rotate_slots)
    slot smallint not null default (floor(extract(epoch from clock_timestamp()))::bigint % 2)::smallint
) partition by list (slot);

create table jobctl._lane_cache_s0 partition of jobctl._lane_cache for values in (0);
create table jobctl._lane_cache_s1 partition of jobctl._lane_cache for values in (1);

create index _lane_cache_key_idx on jobctl._lane_cache (queues_key, fresh_until desc);
