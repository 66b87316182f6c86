-- jobctl.claimable_weight: the summed weight of the tenants with jobs claimable now from a queue
-- filter, among the tenants the caller acts for: the lanes claim_job would choose from (jobctl._lanes,
-- the shared listing: paused tenants and queues left out, a tenant's weight split over its queues). A
-- worker serving several shards shares its slots among them by it (docs/operations.md, Sharding).
-- Locks and writes: those of jobctl._lanes (a listing shared through _lane_cache).
create or replace function jobctl.claimable_weight(queues text[] default null)
returns float8
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_generic_plan
as $$
declare
    v_tenants text[];  -- the caller's tenants (NULL: all)
    v_lanes jobctl._lane_set;
    v_weight float8;
begin
    perform jobctl._claim_check('claimable_weight', claimable_weight.queues, 1, interval '1 second');
    v_tenants := jobctl._acting_tenants('jobs:work');
    v_lanes := jobctl._lanes(claimable_weight.queues, false);
    -- a lane's width is the gap to the next lane's lower bound (the last one's, to the total)
    select coalesce(sum(x.width), 0) into v_weight
    from (
        select u.tenant_id, coalesce(lead(u.low) over (order by u.i), v_lanes.total) - u.low as width
        from unnest(v_lanes.tenants, v_lanes.lows) with ordinality as u (tenant_id, low, i)
    ) as x
    where v_tenants is null or x.tenant_id = any(v_tenants);
    return v_weight;
end
$$;

comment on function jobctl.claimable_weight(text[]) is
'The summed weight of the tenants that have jobs claim_job could hand out now from the given queues (NULL: all),
counting only the tenants the caller may work for: 0 when nothing is due. Paused tenants and queues do not count;
a tenant''s weight is split over its queues as claims split it. A worker claiming from several shards shares its
slots among them in proportion, so that tenants of a crowded shard get their share too. Needs READ COMMITTED.
Errors: JC001 queues with NULL or over 1,000 names, JC007 called under REPEATABLE READ or SERIALIZABLE.
Example:
select jobctl.claimable_weight(array[''email'', ''reports'']);';
