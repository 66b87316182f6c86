-- jobctl.heartbeat: extend a running job's lease if lease_epoch is still current, and store the
-- attempt's latest progress when one is given (NULL keeps the stored one).
-- Calls: _too_deep, _acting_tenants. Reads, when the lease is not current: _event, job.
-- Locks: the _running row (the update).
-- Writes: _running (one HOT update: lease_expires_at and progress are in no index).
create or replace function jobctl.heartbeat(
    job_id bigint, lease_epoch bigint, extend interval default '30 seconds', progress jsonb default null
)
returns text
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan  -- plans made once per session: docs/design.md §6
as $$
#variable_conflict use_column
begin
    if heartbeat.job_id is null or heartbeat.lease_epoch is null then
        raise exception using errcode = 'JC001', message = 'job_id and lease_epoch must not be NULL';
    end if;
    if extend is null or extend <= interval '0' or extend > interval '1 day' then
        raise exception using errcode = 'JC001', message = 'extend must be positive and at most 1 day';
    end if;
    -- _running has no TOAST table: the row must fit a page, hence 2,000 bytes
    if pg_catalog.pg_column_size(heartbeat.progress) > 2000 or jobctl._too_deep(heartbeat.progress) then
        raise exception using errcode = 'JC001',
            message = case when pg_catalog.pg_column_size(heartbeat.progress) > 2000
                then format('progress must be at most 2000 bytes as jsonb, not %s',
                            pg_catalog.pg_column_size(heartbeat.progress))
                else 'progress must not nest arrays and objects more than 100 levels deep' end,
            detail = 'field: progress',
            hint = 'Nothing was written; report a small summary such as {"done": 40, "total": 100}.';
    end if;
    update jobctl._running as r
    set lease_expires_at = clock_timestamp() + extend,
        progress = coalesce(heartbeat.progress, r.progress)
    where r.job_id = heartbeat.job_id and r.lease_epoch = heartbeat.lease_epoch
        and r.tenant_id = any(coalesce((select jobctl._acting_tenants('jobs:work')), array[r.tenant_id]));  -- (another tenant's: lost)
    if found then
        return 'ok';
    end if;
    -- a cancel that revoked a running lease records that epoch on its event (see cancel_job)
    if exists (
        select from jobctl._event as e
        inner join jobctl.job as j on j.job_id = e.job_id and j.created_at = e.job_created_at
        where e.job_id = heartbeat.job_id and e.event = 'cancelled' and e.lease_epoch = heartbeat.lease_epoch
            and j.tenant_id = any(coalesce((select jobctl._acting_tenants('jobs:work')), array[j.tenant_id]))
    ) then
        return 'cancelled';
    end if;
    return 'lost';
end
$$;

comment on function jobctl.heartbeat(bigint, bigint, interval, jsonb) is
'Extend the lease of a running job held under lease_epoch by extend (from now, database clock), and
store progress (any JSON value of at most 2,000 bytes as jsonb, e.g. {"done": 40, "total": 100}) as the
attempt''s latest progress, in the same row update; NULL progress keeps the one stored. get_job shows it; the
job keeps the last one when the attempt ends. Under a stale epoch nothing is stored.
Returns ok, cancelled (the job was cancelled while running under this epoch: stop) or lost (the epoch is no longer
current: stop and do not complete).
Errors: JC001 NULL job_id or lease_epoch, extend not positive or over 1 day, or progress over 2,000 bytes or nested
more than 100 levels (field progress; nothing written).
Example:
select jobctl.heartbeat(42, 7, ''1 minute'');
select jobctl.heartbeat(42, 7, progress => ''{"done": 40, "total": 100}'');';
