-- jobctl._rotate_ready: truncate each partition of _ready but the current slot's (migration 0009)
-- that has storage, after moving the jobs still waiting in it (at most 5,000) on to the current
-- slot. TRUNCATE frees the partition and its index whatever snapshots are open, where VACUUM
-- would have to wait for them, so the dead entries a claim walks at a lane's head are only those
-- of the last few 5-second slots. Called once a second per claiming session (jobctl._housekeep)
-- and by jobctl.tick.
-- Locks: a try-advisory-lock (19011, 3) for the transaction (a second rotator returns at once);
-- ACCESS EXCLUSIVE on the partition, asked for with a 20 ms lock_timeout (every claim
-- locks every partition, so a longer wait would hold claims up); a partition whose lock is not
-- granted, or which holds more than 5,000 waiting jobs (moving them would hold claims up), is
-- left to a later call; the lock of a truncated one is kept to the end of the caller's transaction.
-- p_at: the time whose slot is current (a parameter for the tests). Returns the number of
-- partitions truncated.
create or replace function jobctl._rotate_ready(p_at timestamptz default clock_timestamp())
returns integer
language plpgsql
set lock_timeout = '20ms'
as $$
declare
    v_slot smallint := floor(extract(epoch from p_at) / 5)::bigint % 4;
    v_current text := '_ready_s' || v_slot;
    v_part regclass;
    v_left bigint;
    v_n integer := 0;
begin
    -- one rotator at a time: two, each holding a truncated partition and then claiming, would
    -- each wait for the other's partition
    if not pg_try_advisory_xact_lock(19011, 3) then
        return 0;
    end if;
    for v_part in
        select i.inhrelid::regclass
        from pg_catalog.pg_inherits as i
        inner join pg_catalog.pg_class as c on c.oid = i.inhrelid
        where i.inhparent = 'jobctl._ready'::regclass and c.relname <> v_current
    loop
        begin
            -- a look without the lock first (sizes and reads take ACCESS SHARE, which a truncation
            -- in progress holds up, hence inside the block)
            continue when pg_catalog.pg_relation_size(v_part) = 0;
            execute format('select count(*) from (select from %s limit 5001) as x', v_part) into v_left;
            continue when v_left > 5000;
            execute format('lock table %s in access exclusive mode', v_part);
            -- under the lock no writer is in flight, and this statement's snapshot sees what they
            -- wrote: the jobs still waiting move on to the current slot (named: by the clock it may
            -- have moved on to this very one), keeping their order
            execute format(
                'insert into jobctl._ready (queue, tenant_id, priority, run_at, job_id, created_at, slot)
                 select r.queue, r.tenant_id, r.priority, r.run_at, r.job_id, r.created_at, %s from %s as r',
                v_slot, v_part
            );
            execute format('truncate %s', v_part);
            v_n := v_n + 1;
        exception when lock_not_available then
            null;
        end;
    end loop;
    return v_n;
end
$$;
