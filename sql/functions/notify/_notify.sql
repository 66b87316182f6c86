-- jobctl._notify: a wake-up hint on channel `jobctl` for each queue, its payload the queue's tag
-- (jobctl._hint_tag: any login may LISTEN, and a tag does not name the queue). A hint
-- only: it may be dropped, and workers also poll. NOTIFY serialises notifying commits on a
-- cluster-wide lock held across the commit's WAL flush (commits that send none do not take it), so
-- hints are thinned:
-- - one transaction per queue sends one at a time: it holds the try-lock hint on the queue
--   until it ends, and concurrent submitters skip theirs (many producers on one queue);
-- - a session that finds another transaction sending a hint (any queue: the try-lock hint-busy
--   is taken) sends at most one per queue for the rest of that window (jobctl._hint_window), and
--   tries no lock but the queue's meanwhile (many queues, a producer each). The window and the
--   hashes of the queues hinted in it are kept in the setting jobctl.hinted, which a rollback undoes
--   together with the NOTIFY it was for. With no other sender in flight, every submit of due work
--   sends its hint: nothing to wait for.
-- A skipped hint's job is found by the claims the sent one caused: after a hint the worker looks
-- again every 50 ms for jobctl._hint_window() (it asks jobctl.hint_window), and after a
-- claim that found work 10 ms later (a skipped submit may commit just after that claim). A bare
-- listener finds it at its next poll.
-- Sends nothing while the NOTIFY queue is fuller than jobctl._hint_queue_limit() (half, unless set):
-- a listener that stopped reading (any login may LISTEN and hold a transaction open) keeps the queue
-- from being trimmed, and once it is full every commit that sends a notification fails; a submit
-- must not fail for its hint, so the workers find its job by polling (jobctl doctor warns from
-- the same point).
-- Sends nothing when the setting jobctl.notify is off (`alter role ... set jobctl.notify = off`;
-- false, no and 0 too, as for a boolean setting):
-- for workers that only poll, such as those behind a transaction-pooling proxy, which cannot LISTEN.
-- Locks: the try-locks hint-busy and hint on each queue (jobctl._try_lock).
create or replace function jobctl._notify(p_queues text[])
returns void
language plpgsql  -- not sql: a SQL function called from plpgsql is planned on every call
as $$
declare
    v_window text := floor(extract(epoch from clock_timestamp()) / jobctl._hint_window()::numeric)::bigint::text;
    -- the busy window, then the hashes of the queues hinted in it (an int4 never equals a window
    -- number, > 3e9); empty or of a past window: the session has met no other sender since
    v_hinted text[] := string_to_array(current_setting('jobctl.hinted', true), ' ');
    v_record boolean := false;  -- the setting changes: a new busy window, or a hint sent in one
    v_queue text;
begin
    if lower(current_setting('jobctl.notify', true)) in ('off', 'false', 'no', '0')
       or pg_notification_queue_usage() > jobctl._hint_queue_limit() then
        return;
    end if;
    if v_hinted[1] is distinct from v_window then
        if jobctl._try_lock('hint-busy') then
            v_hinted := null;  -- alone: a hint for every queue
        else
            v_hinted := array[v_window];
            v_record := true;
        end if;
    end if;
    foreach v_queue in array coalesce(p_queues, '{}') loop
        continue when hashtext(v_queue)::text = any(v_hinted);
        if jobctl._try_lock('hint', v_queue) then
            perform pg_notify('jobctl', jobctl._hint_tag(v_queue));
            v_hinted := v_hinted || hashtext(v_queue)::text;
            v_record := v_hinted[1] = v_window;
        end if;
    end loop;
    if v_record then
        perform set_config('jobctl.hinted', array_to_string(v_hinted, ' '), false);
    end if;
end
$$;
