-- jobctl.pause_queue: stop (paused, the default) or restart claims from a queue, at once: the shared
-- lane lists are emptied, so the next claim lists the lanes afresh and leaves the queue out.
-- Submits go on: the queue fills. A queue without settings gets a row (no limits). Writes: queue,
-- _lane_generation and _lane_cache (_relist_lanes), audit_log.
create or replace function jobctl.pause_queue(queue text, paused boolean default true)
returns boolean
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_variable
declare
    v_was boolean;
begin
    perform jobctl._require_every_tenant('queues:write', 'a queue');
    if queue is null or queue = '' or length(queue) > 200 then
        raise exception using errcode = 'JC001', message = 'queue must be a string of 1 to 200 characters',
            detail = 'field: queue';
    end if;
    if paused is null then
        raise exception using errcode = 'JC001', message = 'paused must be true or false', detail = 'field: paused';
    end if;
    select q.paused into v_was from jobctl.queue as q where q.queue = pause_queue.queue for update;
    if not found then
        insert into jobctl.queue as q (queue, paused) values (queue, paused)
        on conflict on constraint queue_pkey do update set paused = excluded.paused, updated_at = now();
        v_was := false;
    elsif v_was <> paused then
        update jobctl.queue as q set paused = pause_queue.paused, updated_at = now() where q.queue = pause_queue.queue;
    end if;
    perform jobctl._relist_lanes();
    perform jobctl._audit('pause_queue', null, jsonb_build_object('queue', queue, 'paused', paused));
    return v_was <> paused;
end
$$;

comment on function jobctl.pause_queue(text, boolean) is
'Pause (paused = true, the default) or resume (false) claims from a queue, for every tenant, at
once; submits are still accepted. Returns whether the state changed.
Errors: JC001 a bad queue or NULL paused, 42501 the caller does not act for every tenant.
Example:
select jobctl.pause_queue(''email'');';
