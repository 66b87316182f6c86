-- 0013_half_second_slots: the slot of _ready, _running and _lane_cache is the half-second a row was
-- written in (was the second: migrations 0011, 0012), still of 2 taken in turn. Immutable once
-- landed: later changes go into a new numbered migration.
--
-- Under an old snapshot a claimed row's index entry stays at its lane's head until its partition
-- is truncated, so every claim of that lane walks the entries of the current slot and of the past
-- one not yet truncated: with 1-second slots, a held REPEATABLE READ transaction took claim p99
-- from 8.6 to 29.8 ms (3.45x; benchmarks/held_snapshot.py, docs/postgres-internals.md). Half the
-- slot is half the walk. Rows already written keep their slot (0 and 1 stay the partitions).
alter table jobctl._ready alter column slot set default (
    floor(extract(epoch from clock_timestamp()) * 2)::bigint % 2
)::smallint;
alter table jobctl._running alter column slot set default (
    floor(extract(epoch from clock_timestamp()) * 2)::bigint % 2
)::smallint;
alter table jobctl._lane_cache alter column slot set default (
    floor(extract(epoch from clock_timestamp()) * 2)::bigint % 2
)::smallint;
