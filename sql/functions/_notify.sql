-- jobctl._notify: a wake-up hint on channel `jobctl` (payload: the queue) for each queue. A hint
-- only: it may be dropped, and workers also poll. NOTIFY serialises notifying commits on a
-- cluster-wide lock held across the commit's WAL flush, so at most one transaction per queue sends
-- one at a time: it holds the try-advisory-lock (19015, queue) until it ends, and concurrent
-- submitters skip theirs. Their jobs are found by the claim that hint causes, or by the worker's
-- second look 10 ms after a claim that found work (their commit may land just after that claim).
-- Sends nothing when the setting jobctl.notify is off (`alter role ... set jobctl.notify = off`;
-- false, no and 0 too, as for a boolean setting):
-- for workers that only poll, such as those behind a transaction-pooling proxy, which cannot LISTEN.
-- Locks: advisory xact lock (19015, hashtext(queue)), try only.
create or replace function jobctl._notify(p_queues text[])
returns void
language plpgsql  -- not sql: a SQL function called from plpgsql is planned on every call
as $$
declare
    v_queue text;
begin
    if lower(current_setting('jobctl.notify', true)) in ('off', 'false', 'no', '0') then
        return;
    end if;
    foreach v_queue in array coalesce(p_queues, '{}') loop
        if pg_try_advisory_xact_lock(19015, hashtext(v_queue)) then
            perform pg_notify('jobctl', v_queue);
        end if;
    end loop;
end
$$;
