-- jobctl._cap: the "cap" step of jobctl.claim_job: the jobs each picked lane may give, under its
-- tenant's max_running and claim rate. For each picked lane whose tenant is limited, a transaction
-- advisory lock on the tenant (a lane whose tenant another claimer holds gives nothing this round);
-- then, in a later statement, whose READ COMMITTED snapshot therefore sees every claim the lock's
-- earlier holders committed, the tenant's room: the smaller of max_running less its running jobs
-- and the tokens in its claim bucket (jobctl._bucket_room), shared by its lanes in lane order. The
-- lock is kept to the end of the claim, so the room read here still holds when jobctl._take spends
-- the tokens. p_tenants, p_limited: the lane set's (jobctl._lanes).
-- Returns p_pick with n capped (0: nothing from that lane) and rated set.
create or replace function jobctl._cap(p_tenants text[], p_limited boolean[], p_pick jobctl._picks)
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
        where p_limited[x.lane] and not pg_try_advisory_xact_lock(19013, hashtext(p_tenants[x.lane]))
    );
    select array_agg(c.n order by c.ord), coalesce(bool_or(c.rated) filter (where c.n > 0), false)
    into v_pick.n, v_pick.rated
    from (
        select p.ord, t.claim_bucket is not null as rated,
            case
                when not p.limited then p.n
                when p.lane = any(v_busy) then 0
                -- (neither limit, when the shared lane list predates the tenant losing both: no cap)
                else least(p.n, greatest(coalesce(least(
                    t.max_running - (select count(*) from jobctl._running as r where r.tenant_id = p.tenant_id),
                    jobctl._bucket_room(t.claim_bucket, t.claim_rate, t.claim_burst)
                ), p.n) - coalesce(sum(p.n) over (
                    partition by p.tenant_id order by p.ord rows between unbounded preceding and 1 preceding
                ), 0), 0))
            end as n
        from (
            select u.lane, u.n, u.ord, p_tenants[u.lane] as tenant_id, p_limited[u.lane] as limited
            from unnest(p_pick.lanes, p_pick.n) with ordinality as u (lane, n, ord)
        ) as p
        left join jobctl.tenant as t on p.limited and t.tenant_id = p.tenant_id
    ) as c;
    return v_pick;
end
$$;
