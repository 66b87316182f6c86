-- jobctl.list_concurrency_limits: the concurrency limits of a tenant (of the caller's tenants), its
-- default for keys without their own first (concurrency_key NULL), each with how many of the key's
-- jobs run or are due (holding a place) and wait for one now. Reads: tenant, concurrency_limit,
-- _held, _ready, _running.
create or replace function jobctl.list_concurrency_limits(tenant_id text)
returns table (concurrency_key text, max_running integer, active bigint, waiting bigint)
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    perform jobctl._require_tenant(list_concurrency_limits.tenant_id, 'jobs:read');
    return query
    select null::text, t.key_max_running, null::bigint,
        (select count(*) from jobctl._held as h where h.tenant_id = t.tenant_id
         and not exists (select from jobctl.concurrency_limit as c where c.tenant_id = h.tenant_id and c.concurrency_key = h.concurrency_key))
    from jobctl.tenant as t
    where t.tenant_id = list_concurrency_limits.tenant_id and t.key_max_running is not null
    union all
    select * from (
        select c.concurrency_key, c.max_running,
            (select count(*) from jobctl._ready as r where r.tenant_id = c.tenant_id and r.concurrency_key = c.concurrency_key)
            + (select count(*) from jobctl._running as r where r.tenant_id = c.tenant_id and r.concurrency_key = c.concurrency_key),
            (select count(*) from jobctl._held as h where h.tenant_id = c.tenant_id and h.concurrency_key = c.concurrency_key)
        from jobctl.concurrency_limit as c
        where c.tenant_id = list_concurrency_limits.tenant_id
        order by c.concurrency_key
    ) as k;
end
$$;

comment on function jobctl.list_concurrency_limits(text) is
'The concurrency limits of a tenant: its default for keys without their own
(concurrency_key NULL; active NULL, waiting: the jobs of such keys waiting) and each key''s own, with its jobs
running or due (active) and waiting.
Errors: 42501 another tenant.
Example:
select * from jobctl.list_concurrency_limits(''acme'');';
