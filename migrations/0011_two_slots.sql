-- 0011_two_slots: _ready and _running go from four slot partitions (0009, 0010) to two.
-- Immutable once landed: later changes go into a new numbered migration.
--
-- Every claim's lane probe is a merge of one index scan per partition, so a backlog spread over
-- four partitions cost four index descents per lane: with 1,000,000 due jobs over 1,000 tenants,
-- claim p50/p99 6.3/113.6 ms and 13,944 buffers to list the lanes, against 2.6/8.2 ms and 3,442 on
-- one table (benchmarks/claim_depth.py, docs/postgres-internals.md). Two slots halve that; the
-- past one still has a full second to be drained and truncated before its turn comes again.
lock table jobctl._ready, jobctl._running in access exclusive mode;

do $$
declare
    v_parent regclass;
    v_cols text;
begin
    foreach v_parent in array array['jobctl._ready'::regclass, 'jobctl._running'::regclass] loop
        select string_agg(quote_ident(a.attname), ', ' order by a.attnum) into v_cols
        from pg_catalog.pg_attribute as a
        where a.attrelid = v_parent and a.attnum > 0 and not a.attisdropped and a.attname <> 'slot';
        for v_slot in 2 .. 3 loop
            execute format('alter table %s detach partition %s_s%s', v_parent, v_parent, v_slot);
            execute format(
                'insert into %s (%s, slot) select %s, %s from %s_s%s',
                v_parent, v_cols, v_cols, v_slot - 2, v_parent, v_slot
            );
            execute format('drop table %s_s%s', v_parent, v_slot);
        end loop;
    end loop;
end
$$;

-- the 1-second slice of time a row was written in, of 2 taken in turn (see jobctl._rotate_slots)
alter table jobctl._ready alter column slot set default (
    floor(extract(epoch from clock_timestamp()))::bigint % 2
)::smallint;
alter table jobctl._running alter column slot set default (
    floor(extract(epoch from clock_timestamp()))::bigint % 2
)::smallint;
