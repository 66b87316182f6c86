-- jobctl.fairness: how the claims were shared among tenants over the last window against how
-- their weights say they should be: each tenant's weight share (among the tenants that had jobs
-- due or running), its share of the claims, its running jobs against max_running, the room in its
-- claim-rate bucket, and whether it is paused. From the counters and the tenant rows.
create or replace function jobctl.fairness("window" interval default '5 minutes')
returns table (
    tenant_id text, weight integer, weight_share double precision, claims bigint, claim_share double precision,
    running bigint, max_running integer, rate_room double precision, paused boolean
)
language sql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
    with per_tenant as (
        select g.tenant_id, sum(g.pending + g.running) as busy, sum(g.running) as running
        from jobctl._stat_gauges() as g
        group by g.tenant_id
    ),
    claimed as (
        select r.tenant_id, sum(r.claimed) as claims
        from jobctl.job_rates(jobctl._stat_since(fairness."window")) as r
        group by r.tenant_id
    ),
    joined as (
        select t.tenant_id, t.weight, t.max_running, t.paused, t.claim_bucket, t.claim_rate, t.claim_burst,
            coalesce(p.busy, 0) as busy, coalesce(p.running, 0) as running, coalesce(k.claims, 0) as claims
        from jobctl.tenant as t
        left join per_tenant as p on p.tenant_id = t.tenant_id
        left join claimed as k on k.tenant_id = t.tenant_id
        -- the caller's tenants (NULL: all of them)
        where t.tenant_id = any(coalesce((select jobctl._acting_tenants('jobs:read')), array[t.tenant_id]))
            and (p.tenant_id is not null or k.tenant_id is not null)
    )
    select j.tenant_id, j.weight,
        case when j.busy > 0 then j.weight / nullif(sum(j.weight) filter (where j.busy > 0) over (), 0)::double precision end,
        j.claims::bigint,
        j.claims / nullif(sum(j.claims) over (), 0)::double precision,
        j.running::bigint, j.max_running,
        jobctl._bucket_room(j.claim_bucket, j.claim_rate, j.claim_burst)::double precision,
        j.paused
    from joined as j
    order by j.tenant_id
$$;

comment on function jobctl.fairness(interval) is
'How claims were shared over the last window (default 5 minutes, at most 6 hours): per tenant its
weight, its weight share among the tenants with jobs due or running now (NULL: none), its claims and their share
of all claims, its running jobs, max_running (NULL: none), the whole tokens in its claim-rate bucket (NULL: no
claim_rate) and whether it is paused. The shares are among the caller''s tenants only.
Errors: JC001 a window not in (0, 6 hours].
Example:
select tenant_id, weight_share, claim_share, running, max_running from jobctl.fairness();';
