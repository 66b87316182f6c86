-- jobctl._notify: a wake-up hint on channel `jobctl` (payload: the queue) for each queue. A hint
-- only: it may be dropped, and workers also poll. NOTIFY serialises commits on a cluster-wide lock
-- held across the commit's WAL flush, so hints are thinned twice:
-- - across sessions: a transaction that is already sending a hint for the queue holds the
--   try-advisory-lock (19015, queue) until it ends; others skip theirs, and their jobs are found by
--   the claim that hint causes, or by the worker's re-poll 10 ms after a claim that found work;
-- - within a session: at most one hint per queue per 10 ms (the same re-poll covers the rest).
-- Locks: advisory xact lock (19015, hashtext(queue)), try only.
create or replace function jobctl._notify(p_queues text[])
returns void
language plpgsql
as $$
declare
    v_sent jsonb := coalesce(nullif(current_setting('jobctl.notified', true), ''), '{}')::jsonb;
    v_now double precision := extract(epoch from clock_timestamp());
    v_queue text;
    v_changed boolean := false;
begin
    foreach v_queue in array coalesce(p_queues, '{}') loop
        if v_now - coalesce((v_sent ->> v_queue)::double precision, 0) >= 0.01
           and pg_try_advisory_xact_lock(19015, hashtext(v_queue)) then
            perform pg_notify('jobctl', v_queue);
            v_sent := v_sent || jsonb_build_object(v_queue, v_now);
            v_changed := true;
        end if;
    end loop;
    if v_changed then
        perform set_config('jobctl.notified', v_sent::text, false);
    end if;
end
$$;
