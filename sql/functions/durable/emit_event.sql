-- jobctl.emit_event: record a tenant's event (the first emit wins) and make every job of the tenant
-- parked on it due now. Steps: the caller's right (events:emit), the event's lock (the one
-- await_event takes: the two serialize, and each reads after it what the other committed), the
-- record, then the waits: each _awaiting row deleted, and its job's _delayed token (found by its
-- key; one a timeout promoted, or a cancel took, is gone) made due now, then promoted by the next
-- claim. The woken job's await_event reads the payload from _emitted.
-- Calls: _require_tenant, _wait_lock, _notify. Locks: the event's _tenant_lock row, then the
-- _awaiting rows, the jobs' _delayed rows and job rows. Writes: _emitted (insert), _awaiting
-- (delete), _delayed and job (update), _event (insert: woken).
create or replace function jobctl.emit_event(tenant_id text, event text, payload jsonb default null)
returns integer
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := clock_timestamp();
    v_woken integer;
    v_queues text[];
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
    insert into jobctl._emitted (tenant_id, event, payload)
    values (emit_event.tenant_id, emit_event.event, emit_event.payload)
    on conflict on constraint _emitted_pkey do nothing;
    if not found then
        return 0;
    end if;
    with gone as (
        delete from jobctl._awaiting as a
        where a.tenant_id = emit_event.tenant_id and a.event = emit_event.event
        returning a.job_id, a.run_at
    ),
    due as (
        update jobctl._delayed as d set run_at = v_now, parked = null
        from gone as g
        where d.run_at = g.run_at and d.job_id = g.job_id and d.parked = 'event'
        returning d.job_id, d.created_at, d.queue
    ),
    woken as (
        update jobctl.job as j set run_at = v_now
        from due as d
        where j.job_id = d.job_id and j.created_at = d.created_at
        returning j.job_id, j.created_at, j.attempt, j.lease_epoch, j.queue
    ),
    history as (
        insert into jobctl._event (job_id, job_created_at, at, event, attempt, lease_epoch, detail)
        select w.job_id, w.created_at, v_now, 'woken', w.attempt + 1, w.lease_epoch, emit_event.event
        from woken as w
    )
    select count(*), array_agg(distinct w.queue) into v_woken, v_queues from woken as w;
    if v_woken > 0 then
        perform jobctl._notify(v_queues);
    end if;
    return v_woken;
end
$$;

comment on function jobctl.emit_event(text, text, jsonb) is
'Record the tenant''s event with payload (a JSON value, or NULL) and make every job of the tenant
waiting on it (await_event) due now; returns how many it woke. The first emit of an event wins: a repeat
returns 0 and changes nothing. Events are kept as long as hot jobs (jobctl.retention.hot, 7 days): an await
that starts later waits for a new emit. Only a caller who may act for the tenant with events:emit (a role
granted the tenant: jobctl_writer; an API token with the scope) may emit its events. Bounds: event 1 to 200
printable characters; payload at most 65536 bytes and 100 levels deep. Needs READ COMMITTED.
Errors: JC001 NULL tenant_id, event or payload out of bounds, 42501 another tenant''s, JC007 another isolation level.
Example:
select jobctl.emit_event(''acme'', ''order-1/approved'', ''{"by": "ops"}'');';
