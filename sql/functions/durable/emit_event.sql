-- jobctl.emit_event: record a tenant's event (the first emit wins) and make every job of the tenant
-- parked on it due now. Steps: the caller's right (events:emit), the event's lock (the one
-- await_event takes: the two serialize, and each reads after it what the other committed), the
-- fence of a tenant moved off this shard (JC011), the record, then the waits (jobctl._wake_awaiting).
-- Calls: _require_tenant, _wait_lock, _refuse_moved, _wake_awaiting. Locks: the event's
-- _tenant_lock row, then through _wake_awaiting the waiting jobs' rows and their wait and queue
-- rows. Writes: _emitted (insert); through _wake_awaiting _awaiting (delete), _delayed and job
-- (update), _event (insert: woken).
create or replace function jobctl.emit_event(tenant_id text, event text, payload jsonb default null)
returns integer
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := clock_timestamp();
begin
    if emit_event.tenant_id is null then
        raise exception using errcode = 'JC001', message = 'tenant_id must not be NULL', detail = 'field: tenant_id';
    end if;
    perform jobctl._event_check(emit_event.event);
    if octet_length(emit_event.payload::text) > 65536 or jobctl._too_deep(emit_event.payload) then
        raise exception using errcode = 'JC001',
            message = format('payload is %s bytes or nests over 100 levels; the limits are 65536 bytes and 100 levels',
                octet_length(emit_event.payload::text)),
            detail = 'field: payload';
    end if;
    if current_setting('transaction_isolation') <> 'read committed' then
        raise exception using errcode = 'JC007',
            message = format('emit_event needs READ COMMITTED isolation, not %s', upper(current_setting('transaction_isolation'))),
            hint = 'Call it in autocommit mode or in a READ COMMITTED transaction.';
    end if;
    perform jobctl._require_tenant(emit_event.tenant_id, 'events:emit');

    perform jobctl._wait_lock('event', array[emit_event.tenant_id], array[emit_event.event]);
    -- after the lock: a tenant move's hand-over of the events (jobctl._move_out_events) holds every
    -- event lock of the tenant once its fence has committed, so an emit either committed before the
    -- hand-over read the events or finds the fence here
    if exists (select from jobctl.tenant as t where t.tenant_id = emit_event.tenant_id and t.moved_to is not null) then
        perform jobctl._refuse_moved(emit_event.tenant_id);
    end if;
    insert into jobctl._emitted (tenant_id, event, payload)
    values (emit_event.tenant_id, emit_event.event, emit_event.payload)
    on conflict on constraint _emitted_pkey do nothing;
    if not found then
        return 0;
    end if;
    return jobctl._wake_awaiting(emit_event.tenant_id, array[emit_event.event], v_now);
end
$$;

comment on function jobctl.emit_event(text, text, jsonb) is
'Record the tenant''s event with payload (a JSON value, or NULL) and make every job of the tenant
waiting on it (await_event) due now; returns how many it woke. The first emit of an event wins: a repeat
returns 0 and changes nothing. Events are kept as long as hot jobs (jobctl.retention.hot, 7 days): an await
that starts later waits for a new emit. Only a caller who may act for the tenant with events:emit (a role
granted the tenant: jobctl_writer; an API token with the scope) may emit its events. Bounds: event 1 to 200
printable characters; payload at most 65536 bytes and 100 levels deep. Needs READ COMMITTED.
On a shard, an event of a tenant that has moved off it is refused (JC011): emit it through the router.
Errors: JC001 NULL tenant_id, event or payload out of bounds, 42501 another tenant''s, JC007 another isolation level,
JC011 the tenant moved to another shard.
Example:
select jobctl.emit_event(''acme'', ''order-1/approved'', ''{"by": "ops"}'');';
