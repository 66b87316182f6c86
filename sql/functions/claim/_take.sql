-- jobctl._take: the "take" step of jobctl.claim_job: from each picked lane, up to its capped n
-- jobs in the lane's order (higher priority, then earlier run_at, then lower id), FOR UPDATE SKIP
-- LOCKED on the lane's index range; their _ready rows deleted (whoever deletes a job's queue row
-- owns its next transition); the claim-rate tokens they use spent from their tenants' and their
-- queues' buckets (jobctl._cap holds those tenants' and queues' locks). p_queues, p_tenants: the lane set's (jobctl._lanes).
-- Returns the jobs' ids and created_at, and the picked lanes that gave fewer than wanted (drained,
-- heads locked by other claimers, or capped): out of play for the claim's next rounds.
-- Calls: _take_tokens (only when a picked lane is rated).
-- Locks: _ready rows (FOR UPDATE SKIP LOCKED).
-- Writes: _ready (delete); through _take_tokens the claim rate bucket sequences of the tenants and
-- queues (setval, nextval: not undone by a rollback).
create or replace function jobctl._take(p_queues text[], p_tenants text[], p_pick jobctl._picks)
returns jobctl._took
language plpgsql
set plan_cache_mode = force_generic_plan
set jit = off  -- a generic plan's estimates at depth pass jit_above_cost, and JIT compiles per call
as $$
declare
    v_took jobctl._took;
    v_lanes integer[];  -- with a rated lane: the lane of each job taken
begin
    with taken as (
        select w.lane, r.slot, r.rid
        from unnest(p_pick.lanes, p_pick.n) as w (lane, n)
        cross join lateral (
            select r.slot, r.ctid as rid from jobctl._ready as r
            where r.queue = p_queues[w.lane] and r.tenant_id = p_tenants[w.lane]
            order by r.priority desc, r.run_at, r.job_id
            limit w.n
            for update skip locked
        ) as r
        where w.n > 0
    ),
    -- a TID scan per slot: a ctid names a row only within its partition, and a TID list given to
    -- both partitions would fetch every listed page of each (by the slot constant the plan prunes
    -- to one)
    gone_s0 as (
        delete from jobctl._ready as r
        where r.slot = 0 and r.ctid = any(array(select t.rid from taken as t where t.slot = 0))
        returning r.job_id, r.created_at
    ),
    gone_s1 as (
        delete from jobctl._ready as r
        where r.slot = 1 and r.ctid = any(array(select t.rid from taken as t where t.slot = 1))
        returning r.job_id, r.created_at
    ),
    gone as (table gone_s0 union all table gone_s1)
    select
        (select array_agg(g.job_id) from gone as g),
        (select array_agg(g.created_at) from gone as g),
        array(
            select w.lane from unnest(p_pick.lanes, p_pick.wanted) as w (lane, wanted)
            where w.wanted > (select count(*) from taken as t where t.lane = w.lane)
        ),
        case when p_pick.rated then (select array_agg(t.lane) from taken as t) end
    into v_took.ids, v_took.cas, v_took.short, v_lanes;
    if v_lanes is not null then
        perform jobctl._take_tokens(t.claim_bucket, t.claim_rate, t.claim_burst, g.n)
        from (select p_tenants[x.lane] as tenant_id, count(*)::integer as n from unnest(v_lanes) as x (lane) group by 1) as g
        inner join jobctl.tenant as t on t.tenant_id = g.tenant_id
        where t.claim_bucket is not null;
        perform jobctl._take_tokens(q.claim_bucket, q.claim_rate, q.claim_burst, g.n)
        from (select p_queues[x.lane] as queue, count(*)::integer as n from unnest(v_lanes) as x (lane) group by 1) as g
        inner join jobctl.queue as q on q.queue = g.queue
        where q.claim_bucket is not null;
    end if;
    return v_took;
end
$$;
