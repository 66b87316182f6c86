-- jobctl.heartbeat: extend a running job's lease if lease_epoch is still current.
-- Writes: _running (a HOT update: lease_expires_at is in no index).
create or replace function jobctl.heartbeat(job_id bigint, lease_epoch bigint, extend interval default '30 seconds')
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
    update jobctl._running as r
    set lease_expires_at = clock_timestamp() + extend
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

comment on function jobctl.heartbeat(bigint, bigint, interval) is
'Extend the lease of a running job held under lease_epoch by extend (from now, database clock).
Returns ok, cancelled (the job was cancelled while running under this epoch: stop) or lost (the epoch is no longer
current: stop and do not complete).
Errors: JC001 NULL job_id or lease_epoch, or extend not positive or over 1 day.
Example:
select jobctl.heartbeat(42, 7, ''1 minute'');';
