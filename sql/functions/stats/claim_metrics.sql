-- jobctl.claim_metrics: claims per tenant and queue over the last `window`, with the wait from due
-- to claimed. It scans the hot job partitions (started_at is deliberately in no index: claims stay
-- HOT updates), so it is an operator's query, not one to run every second on a large table.
create or replace function jobctl.claim_metrics(
    window_length interval default '1 minute', only_tenant text default null, only_queue text default null
)
returns table (
    tenant_id text, queue text, claims bigint, claims_per_s double precision, wait_p50_s double precision,
    wait_p99_s double precision
)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
#variable_conflict use_column
begin
    if window_length is null or window_length <= interval '0' or window_length > interval '1 day' then
        raise exception using errcode = 'JC001', message = 'window_length must be positive and at most 1 day',
            detail = 'field: window_length';
    end if;
    return query
    select j.tenant_id, j.queue, count(*),
        count(*) / extract(epoch from window_length)::double precision,
        -- a failed, released or retried job's run_at is its next due time: its last wait is not known
        percentile_cont(0.5) within group (order by extract(epoch from j.started_at - j.run_at)::double precision)
            filter (where j.run_at <= j.started_at),
        percentile_cont(0.99) within group (order by extract(epoch from j.started_at - j.run_at)::double precision)
            filter (where j.run_at <= j.started_at)
    from jobctl.job as j
    where j.started_at >= clock_timestamp() - window_length
        and (only_tenant is null or j.tenant_id = only_tenant)
        and (only_queue is null or j.queue = only_queue)
        -- the caller's tenants only (NULL: all of them)
        and j.tenant_id = any(coalesce((select jobctl._acting_tenants('jobs:read')), array[j.tenant_id]))
    group by j.tenant_id, j.queue
    order by 1, 2;
end
$$;

comment on function jobctl.claim_metrics(interval, text, text) is
'Claims per tenant and queue over the last window_length: how many jobs had their latest attempt
claimed, the rate per second, and the p50 / p99 wait in seconds from due (run_at) to claimed (over jobs whose run_at
is still that attempt''s due time: not failed, released or retried since). Optionally only_tenant and/or only_queue.
Scans the hot job partitions: for an operator, not for a scraper every second.
Errors: JC001 window_length not positive or over 1 day.
Example:
select * from jobctl.claim_metrics(''5 minutes'', only_tenant => ''acme'');';
