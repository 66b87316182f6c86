-- jobctl._move_in_events: the moving tenant's events (p_events, from jobctl._move_out_events on the
-- source after its fence) recorded on this, the target shard, before the router flips, and the
-- tenant's jobs here that wait on them woken (jobctl._wake_awaiting): jobs the copy brought parked
-- on an event the source recorded after their page. An event already recorded here keeps its payload
-- (the first emit wins; a rerun changes nothing). Returns how many jobs it woke.
-- Calls: _wait_lock, _wake_awaiting. Locks: the events' _tenant_lock rows, then those of
-- _wake_awaiting. Writes: _emitted (insert); through _wake_awaiting _awaiting, _delayed, job, _event.
create or replace function jobctl._move_in_events(p_tenant_id text, p_events jsonb)
returns integer
language plpgsql
as $$
declare
    v_events text[];
begin
    select array_agg(e.event order by e.event) into v_events
    from jsonb_to_recordset(p_events) as e (event text);
    if v_events is null then
        return 0;
    end if;
    perform jobctl._wait_lock('event', array_fill(p_tenant_id, array[cardinality(v_events)]), v_events);
    insert into jobctl._emitted (tenant_id, event, emitted_at, payload)
    select p_tenant_id, e.event, e.emitted_at, e.payload
    from jsonb_to_recordset(p_events) as e (event text, emitted_at timestamptz, payload jsonb)
    on conflict on constraint _emitted_pkey do nothing;
    return jobctl._wake_awaiting(p_tenant_id, v_events, clock_timestamp());
end
$$;
