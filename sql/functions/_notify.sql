-- jobctl._notify: a wake-up hint on channel `jobctl` (payload: the queue) for each queue, at most
-- once per queue per 10 ms from this session (a worker re-polls 10 ms after a claim that found work,
-- which covers the hints held back). A hint only: it may be dropped; workers also poll.
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
        if v_now - coalesce((v_sent ->> v_queue)::double precision, 0) >= 0.01 then
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
