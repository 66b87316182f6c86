-- Where a call runs: the RUN ON functions of the router's jobctl.* functions. Each returns shard
-- numbers (= PL/Proxy partitions, cluster.sql). SECURITY DEFINER, so that the roles hold no
-- privilege on the router's tables (sql/router/grants.sql): a caller places a tenant only where its
-- hash puts it, reads nothing of the shards' connect strings, and writes no route.

-- jobctl_router.tenant_shard: the tenant's shard. A tenant not yet placed gets one from a hash of its
-- id over the shards, recorded when p_place (calls that write); a read of an unplaced tenant goes
-- where it would be placed (it has no jobs anywhere). The hash, not the least loaded shard: should
-- the router's transaction roll back after the shard's committed (a lost answer), the next call places
-- the tenant on the same shard again.
create or replace function jobctl_router.tenant_shard(p_tenant text, p_place boolean default false)
returns integer
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_shard integer;
begin
    select p.shard into v_shard from jobctl_router.placement as p where p.tenant_id = p_tenant;
    if found then
        return v_shard;
    end if;
    select s.shard into v_shard from jobctl_router.shard as s order by s.shard
    offset (abs(hashtext(coalesce(p_tenant, ''))::bigint) % greatest((select count(*) from jobctl_router.shard), 1))
    limit 1;
    if v_shard is null then
        raise exception using errcode = 'JC001', message = 'the router has no shards',
            detail = 'field: jobctl_router.shard', hint = 'Add them: jobctl shards init-router --shard N=DSN ...';
    end if;
    if p_place and p_tenant is not null then
        insert into jobctl_router.placement (tenant_id, shard) values (p_tenant, v_shard)
        on conflict (tenant_id) do nothing;
        select p.shard into v_shard from jobctl_router.placement as p where p.tenant_id = p_tenant;
    end if;
    return v_shard;
end
$$;

-- jobctl_router.tenant_shards: the tenant's shard, or every shard when the tenant is NULL (the
-- functions whose tenant filter is optional: they are set-returning, and PL/Proxy runs them on each)
create or replace function jobctl_router.tenant_shards(p_tenant text)
returns setof integer
language sql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
    select jobctl_router.tenant_shard(p_tenant) where p_tenant is not null
    union all
    select s.shard from jobctl_router.shard as s where p_tenant is null
$$;

-- jobctl_router.job_shard: the shard of a job id: its job_route row (moved with its tenant), else
-- the residue id % 64 the shard's sequence gave it (jobctl.init_shard)
create or replace function jobctl_router.job_shard(p_job_id bigint)
returns integer
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
    select coalesce(
        (select r.shard from jobctl_router.job_route as r where r.job_id = p_job_id),
        (abs(coalesce(p_job_id, 0)) % 64)::integer
    )
$$;

-- jobctl_router.jobs_shard: the shard of a submit_jobs call: the tenant of all its jobs. A call
-- holds one tenant's jobs (the shards' all-or-nothing cannot span shards): split by tenant before.
create or replace function jobctl_router.jobs_shard(p_jobs jsonb)
returns integer
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_tenants text[];
begin
    if jsonb_typeof(p_jobs) = 'array' then
        select array_agg(distinct j.value ->> 'tenant_id') into v_tenants from jsonb_array_elements(p_jobs) as j;
    end if;
    if cardinality(v_tenants) > 1 then
        raise exception using errcode = 'JC001',
            message = 'jobs of several tenants in one submit_jobs call through the router',
            detail = 'field: jobs',
            hint = 'A call through the router is all or nothing on one shard: send each tenant''s jobs in a call of its own.';
    end if;
    -- an empty or malformed array: the tenant's shard answers with the shards' own error
    return jobctl_router.tenant_shard(v_tenants[1], true);
end
$$;

-- jobctl_router.claim_shard: the next shard in turn for a claim through the router (round robin
-- over the shards, all callers together)
create or replace function jobctl_router.claim_shard()
returns integer
language sql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
    select s.shard from jobctl_router.shard as s order by s.shard
    offset (nextval('jobctl_router.claim_turn') % greatest((select count(*) from jobctl_router.shard), 1))
    limit 1
$$;
