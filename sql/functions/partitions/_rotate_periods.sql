-- jobctl._rotate_periods: for _ready and _running (partitioned by the half-second slot a row was
-- written in, taken in turn) and _lane_cache (by the 8-second slot:
-- 0012, 0014), truncate the past slot's partition once it is drained, after moving the rows still
-- in it (jobs waiting, leases running) on to the current slot under the partition's lock. A
-- partition holding more than 5,000 rows is left as it is: moving them would hold claims up, and
-- rows moved on would only have to move again half a second later; a backlog leaves by being
-- claimed, and VACUUM cleans behind the claims meanwhile.
-- Of the lane cache only each key's newest row moves on, only when the current slot has none
-- newer, and only if a claim used the filter in the last minute: claimers fall back on it while
-- one of them refreshes it, so the truncation does not send them all to list the lanes at once
-- (older rows are superseded versions; one row a key a slot moves).
-- TRUNCATE frees a partition and its indexes whatever snapshots are open, where VACUUM would have
-- to wait for them, so the dead rows a claim, a completion or the reaper can meet are those of the
-- last slot or two. Each truncation writes a pg_class row per relation that an old snapshot keeps
-- too, hence few relations. Called by jobctl.tick while the xmin horizon is held
-- back (jobctl._horizon_held): otherwise VACUUM and the index scans themselves clean behind claims.
-- Locks: the try-lock rotate (jobctl._try_lock) for the transaction (a second rotator returns at once);
-- ACCESS EXCLUSIVE on the partition, asked for with a 20 ms lock_timeout (every claim and
-- completion locks every partition, so a longer wait would hold them up); a partition whose lock
-- is not granted is left to a later call; the lock of a truncated one is kept to the end of the
-- caller's transaction.
-- A statement held up by that lock takes its snapshot after it (plpgsql takes the locks of a
-- statement before its snapshot), so it finds a moved row in its new partition.
-- p_at: the time whose slot is current (a parameter for the tests). Returns the number of
-- partitions truncated.
create or replace function jobctl._rotate_periods(p_at timestamptz default clock_timestamp())
returns integer
language plpgsql
set lock_timeout = '20ms'
as $$
declare
    v_part record;
    v_left bigint;
    v_n integer := 0;
begin
    -- one rotator at a time: two, each holding a truncated partition and then claiming, would
    -- each wait for the other's partition
    if not jobctl._try_lock('rotate') then
        return 0;
    end if;
    for v_part in
        select p.parent, i.inhrelid::regclass as part, s.slot,
            (select string_agg(quote_ident(a.attname), ', ' order by a.attnum)
             from pg_catalog.pg_attribute as a
             where a.attrelid = p.parent and a.attnum > 0 and not a.attisdropped and a.attname <> 'slot') as cols
        -- _running first: a claim that reaps (once a second) holds it before the lane cache and
        -- _ready, and with _ready first those claims kept _running from being truncated; other
        -- claims lock _running last, and the 20 ms lock_timeout settles those waits
        from (values ('jobctl._running'::regclass, 2.0, 0), ('jobctl._lane_cache', 0.125, 1), ('jobctl._ready', 2.0, 2))
            as p (parent, slots_a_second, turn)
        -- as the slot column's default: the slot's number modulo the number of partitions
        cross join lateral (
            select (floor(extract(epoch from p_at) * p.slots_a_second)::bigint % count(*))::smallint as slot
            from pg_catalog.pg_inherits as i where i.inhparent = p.parent
        ) as s
        inner join pg_catalog.pg_inherits as i on i.inhparent = p.parent
        inner join pg_catalog.pg_class as c on c.oid = i.inhrelid
        -- relid 0: a bound is constants, and with a relation's OID pg_get_expr opens it, which
        -- the planner may do for every partition in pg_class, queuing behind any lock on one
        where pg_catalog.pg_get_expr(c.relpartbound, 0) <> format('FOR VALUES IN (''%s'')', s.slot)
        order by p.turn
    loop
        begin
            -- a look without the lock first (sizes and reads take ACCESS SHARE, which a truncation
            -- in progress holds up, hence inside the block)
            continue when pg_catalog.pg_relation_size(v_part.part) = 0;
            if v_part.parent <> 'jobctl._lane_cache'::regclass then
                execute format('select count(*) from (select from %s limit 5001) as x', v_part.part) into v_left;
                continue when v_left > 5000;
            end if;
            execute format('lock table %s in access exclusive mode', v_part.part);
            -- under the lock no writer is in flight, and this statement's snapshot sees what they
            -- wrote: the rows still there move on to the current slot (named: by the clock it may
            -- have moved on to this very one), in the same order
            if v_part.parent <> 'jobctl._lane_cache'::regclass then
                execute format(
                    'insert into %s (%s, slot) select %s, %s from %s',
                    v_part.parent, v_part.cols, v_part.cols, v_part.slot, v_part.part
                );
            else
                execute format(
                    'insert into %1$s (%2$s, slot)
                     select distinct on (p.queues_key) %3$s, %4$s from %5$s as p
                     where p.fresh_until > clock_timestamp() - interval ''1 minute''
                         and not exists (select from %1$s as c where c.queues_key = p.queues_key
                                       and c.fresh_until >= p.fresh_until and c.tableoid <> p.tableoid)
                     order by p.queues_key, p.fresh_until desc',
                    v_part.parent, v_part.cols, 'p.' || replace(v_part.cols, ', ', ', p.'), v_part.slot, v_part.part
                );
            end if;
            execute format('truncate %s', v_part.part);
            v_n := v_n + 1;
        exception when lock_not_available then
            null;
        end;
    end loop;
    return v_n;
end
$$;
