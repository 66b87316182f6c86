-- jobctl.parent_results: the results of a job's parents (its depends_on), as {"<parent id>": result}.
-- Reads: job (the child by id), job and job_archive (the parents by id).
create or replace function jobctl.parent_results(job_id bigint)
returns jsonb
language sql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
    select jsonb_object_agg(p.job_id::text, p.result)
    from jobctl._job_view as c
    cross join lateral (
        select j.job_id, j.result from jobctl.job as j
        where j.job_id = any(c.depends_on) and j.tenant_id = c.tenant_id
        union all
        select j.job_id, j.result from jobctl.job_archive as j
        where j.job_id = any(c.depends_on) and j.tenant_id = c.tenant_id
    ) as p
    where c.job_id = parent_results.job_id
        and c.tenant_id = any(coalesce((select jobctl._acting_tenants('jobs:read')), array[c.tenant_id]))
$$;

comment on function jobctl.parent_results(bigint) is
'The results of the job''s parents (the jobs in its depends_on), as a JSON object {"<parent id>": result};
NULL for a job without parents, an unknown job or another tenant''s. A parent''s result is NULL until it
completes (a child runs only once they all did, unless a parent was retried). get_job shows the same.
Errors: none.
Example:
select jobctl.parent_results(42);  -- {"40": {"rows": 120}, "41": {"rows": 7}}';
