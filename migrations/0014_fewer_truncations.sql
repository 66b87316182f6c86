-- 0014_fewer_truncations: each rotation (jobctl._rotate_slots, twice a second) truncates fewer
-- relations. Immutable once landed: later changes go into a new numbered migration.
--
-- A TRUNCATE writes a new pg_class row for the table and for each of its indexes (relfilenode is
-- indexed: never HOT), and under an old snapshot every version stays: a REPEATABLE READ held
-- for minutes made six truncations go from 13 to 68 ms as 1,200 versions a relation piled up
-- (unique-index checks and relcache rebuilds walk them all), and claims wait behind the rotation's
-- ACCESS EXCLUSIVE (docs/postgres-internals.md §1.4). So:
-- - _ready and _running lose their TOAST tables (two pg_class rows each a truncation): their text
--   columns are PLAIN, which needs none; submit and claim_job cap them at 200 characters;
-- - the lane cache's slot is 8 seconds, not half a second: its rows are only inserted and a
--   reader's descent lands on the newest, so its past rows cost space, not time.
-- A table keeps its TOAST table for life, so the partitions of _ready and _running are made anew
-- (same names, settings and rows).
lock table jobctl._ready, jobctl._running, jobctl._lane_cache in access exclusive mode;

alter table jobctl._ready alter column queue set storage plain;
alter table jobctl._ready alter column tenant_id set storage plain;
alter table jobctl._running alter column tenant_id set storage plain;
alter table jobctl._running alter column queue set storage plain;
alter table jobctl._running alter column worker_id set storage plain;

do $$
declare
    v_part record;
begin
    for v_part in
        select i.inhparent::regclass as parent, c.relname as name, c.reloptions,
            pg_catalog.pg_get_expr(c.relpartbound, 0) as bound
        from pg_catalog.pg_inherits as i
        inner join pg_catalog.pg_class as c on c.oid = i.inhrelid
        where i.inhparent in ('jobctl._ready'::regclass, 'jobctl._running'::regclass) and c.reltoastrelid <> 0
    loop
        execute format('alter table %s detach partition jobctl.%I', v_part.parent, v_part.name);
        execute format('create temp table rows_of_old_partition on commit drop as table jobctl.%I', v_part.name);
        execute format('drop table jobctl.%I', v_part.name);
        execute format('create table jobctl.%I partition of %s %s', v_part.name, v_part.parent, v_part.bound);
        if v_part.reloptions is not null then
            execute format('alter table jobctl.%I set (%s)', v_part.name, array_to_string(v_part.reloptions, ', '));
        end if;
        execute format('insert into jobctl.%I table rows_of_old_partition', v_part.name);
        drop table rows_of_old_partition;
    end loop;
end
$$;

-- the 8-second slice of time a row was written in, of 2 taken in turn (see jobctl._rotate_slots)
alter table jobctl._lane_cache alter column slot set default (
    floor(extract(epoch from clock_timestamp()) / 8)::bigint % 2
)::smallint;
