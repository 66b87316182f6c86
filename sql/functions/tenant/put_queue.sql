-- jobctl.put_queue: create or replace a queue's settings; omitted fields get their defaults (no
-- limit, not paused). max_running caps the queue's running jobs across all tenants, claim_rate
-- (with claim_burst, default one second's worth, at least 1) its claims a second; both hold under
-- concurrent claimers, as a tenant's (claim_job's cap step). A new rate keeps the bucket's level.
-- The shared lane lists are emptied, so the next claim sees a pause or a limit at once.
-- Locks: the queue row. Writes: queue, the bucket sequence (jobctl._put_sequence), _lane_generation
-- and _lane_cache (_relist_lanes), audit_log.
create or replace function jobctl.put_queue(
    queue text,
    max_running integer default null,
    claim_rate numeric default null,
    claim_burst integer default null,
    paused boolean default false
)
returns void
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_variable
declare
    v_field text;
begin
    v_field := case
        when queue is null or queue = '' or length(queue) > 200 or queue ~ jobctl._unprintable() then 'queue'
        when max_running < 0 or max_running > 1000000 then 'max_running'
        when claim_rate <= 0 or claim_rate > 1000000 then 'claim_rate'
        when claim_burst < 1 or claim_burst > 1000000 then 'claim_burst'
        when claim_burst is not null and claim_rate is null then 'claim_burst'
        when paused is null then 'paused'
    end;
    perform jobctl._require_every_tenant('queues:write', 'a queue');
    if v_field is not null then
        raise exception using errcode = 'JC001',
            message = format('%s is out of range', v_field),
            detail = format('field: %s', v_field),
            hint = 'queue: 1-200 characters; max_running: NULL (unlimited) or 0..1000000; claim_rate > 0 and <= 1000000 a second; claim_burst 1..1000000, with a claim_rate; paused true or false.';
    end if;
    insert into jobctl.queue as q (queue, max_running, claim_rate, claim_burst, claim_bucket, paused)
    values (
        queue, max_running, claim_rate, claim_burst,
        jobctl._put_sequence(queue, 'queue_claim_bucket', ceil(1000000 / claim_rate)::bigint), paused
    )
    on conflict on constraint queue_pkey do update
    set max_running = excluded.max_running, claim_rate = excluded.claim_rate, claim_burst = excluded.claim_burst,
        claim_bucket = excluded.claim_bucket, paused = excluded.paused, updated_at = now();
    perform jobctl._relist_lanes();
    perform jobctl._audit('put_queue', null, jsonb_build_object(
        'queue', queue, 'max_running', max_running, 'claim_rate', claim_rate, 'claim_burst', claim_burst,
        'paused', paused
    ));
end
$$;

comment on function jobctl.put_queue(text, integer, numeric, integer, boolean) is
'Create or replace a queue''s settings (omitted: no limit, not paused). max_running caps its
running jobs across all tenants, claim_rate (per second, with claim_burst) its claims; paused stops its claims at
once (submits go on). Both limits hold under concurrent claimers.
Errors: JC001 naming the bad field, 42501 the caller does not act for every tenant.
Example:
select jobctl.put_queue(''email'', max_running => 50, claim_rate => 200, claim_burst => 20);';
