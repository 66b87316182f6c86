-- jobctl._cap: the "cap" step of jobctl.claim_job: the jobs each picked lane may give, under its
-- tenant's and its queue's max_running and claim rates. For each picked lane that is limited, a
-- try-lock on the row of its limited tenant and of its limited queue (FOR NO KEY UPDATE SKIP LOCKED) (a lane whose tenant or
-- queue another claimer holds gives nothing this round); then, in a later statement, whose READ
-- COMMITTED snapshot therefore sees every claim the locks' earlier holders committed, the room of
-- each: the smaller of max_running less its running jobs and the tokens in its claim bucket
-- (jobctl._bucket_room), shared by its lanes in lane order; a lane gets the smaller of its tenant's
-- and its queue's share. The locks are kept to the end of the claim, so the room read here still
-- holds when jobctl._take spends the tokens. p_queues, p_tenants, p_limited: the lane set's.
-- Returns p_pick with n capped (0: nothing from that lane) and rated set.
-- Calls: _bucket_room. Reads: tenant, queue, _running (counts), the claim rate buckets.
-- Locks: the tenant and queue rows of limited lanes (FOR NO KEY UPDATE SKIP LOCKED), to the end of
-- the transaction (no lock when no picked lane is limited). Writes: nothing.
create or replace function jobctl._cap(p_queues text[], p_tenants text[], p_limited boolean[], p_pick jobctl._picks)
returns jobctl._picks
language plpgsql
set plan_cache_mode = force_generic_plan
as $$
declare
    v_pick jobctl._picks := p_pick;
    v_busy integer[];
begin
    if not true = any(p_limited) then
        return v_pick;
    end if;
    v_busy := array(
        select x.lane from unnest(p_pick.lanes) as x (lane)
        left join jobctl.tenant as t
            on t.tenant_id = p_tenants[x.lane] and (t.max_running is not null or t.claim_bucket is not null)
        left join jobctl.queue as q
            on q.queue = p_queues[x.lane] and (q.max_running is not null or q.claim_bucket is not null)
        where p_limited[x.lane] and (
            (t.tenant_id is not null and not exists (
                select from jobctl.tenant as l where l.tenant_id = t.tenant_id for no key update skip locked))
            or (q.queue is not null and not exists (
                select from jobctl.queue as l where l.queue = q.queue for no key update skip locked))
        )
    );
    select array_agg(c.n order by c.ord), coalesce(bool_or(c.rated) filter (where c.n > 0), false)
    into v_pick.n, v_pick.rated
    from (
        -- a lane's share of a room: the room less what the same tenant's (queue's) earlier lanes
        -- want; no room (no limit, also when the shared lane list predates a limit's removal): no cap
        select r.ord, r.rated,
            case
                when not r.limited then r.n
                when r.lane = any(v_busy) then 0
                else least(
                    r.n,
                    case when r.t_room is null then r.n else greatest(r.t_room - coalesce(sum(r.n) over (
                        partition by r.tenant_id order by r.ord rows between unbounded preceding and 1 preceding
                    ), 0), 0) end,
                    case when r.q_room is null then r.n else greatest(r.q_room - coalesce(sum(r.n) over (
                        partition by r.queue order by r.ord rows between unbounded preceding and 1 preceding
                    ), 0), 0) end
                )
            end as n
        from (
            select p.*, t.claim_bucket is not null or q.claim_bucket is not null as rated,
                least(
                    t.max_running - (select count(*) from jobctl._running as x where x.tenant_id = p.tenant_id),
                    jobctl._bucket_room(t.claim_bucket, t.claim_rate, t.claim_burst)
                ) as t_room,
                least(
                    q.max_running - (select count(*) from jobctl._running as x where x.queue = p.queue),
                    jobctl._bucket_room(q.claim_bucket, q.claim_rate, q.claim_burst)
                ) as q_room
            from (
                select u.lane, u.n, u.ord, p_queues[u.lane] as queue, p_tenants[u.lane] as tenant_id,
                    p_limited[u.lane] as limited
                from unnest(p_pick.lanes, p_pick.n) with ordinality as u (lane, n, ord)
            ) as p
            left join jobctl.tenant as t on p.limited and t.tenant_id = p.tenant_id
            left join jobctl.queue as q on p.limited and q.queue = p.queue
        ) as r
    ) as c;
    return v_pick;
end
$$;
