-- jobctl.parent_results: the results of a job's parents (its depends_on), as {"<parent id>": result},
-- while they are at most 8 MiB of JSON text together (jobctl._parent_results; docs/security.md, Bounds).
-- Reads: job (the child by id), job and job_archive (the parents by id).
create or replace function jobctl.parent_results(job_id bigint)
returns jsonb
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
declare
    v_child record;
    v_read record;
begin
    select c.tenant_id, c.depends_on into v_child
    from jobctl._job_view as c
    where c.job_id = parent_results.job_id
        and c.tenant_id = any(coalesce((select jobctl._acting_tenants('jobs:read')), array[c.tenant_id]));
    if v_child.depends_on is null then
        return null;
    end if;
    v_read := jobctl._parent_results(v_child.tenant_id, v_child.depends_on);
    if v_read.over_bound then
        raise exception 'parent_results: the results of job %''s % parents are over 8 MiB of JSON text together',
            parent_results.job_id, cardinality(v_child.depends_on)
        using errcode = 'JC001', detail = 'field: job_id',
            hint = 'Read each parent''s result alone: get_job(parent id) for each id of the job''s depends_on.';
    end if;
    return v_read.results;
end
$$;

comment on function jobctl.parent_results(bigint) is
'The results of the job''s parents (the jobs in its depends_on), as a JSON object {"<parent id>": result};
NULL for a job without parents, an unknown job or another tenant''s. A parent''s result is NULL until it
completes (a child runs only once they all did, unless a parent was retried). get_job shows the same, or NULL
past the bound. At most 8 MiB: the parents'' results, as JSON text, add up to at most 8,388,608 bytes
(docs/security.md, Bounds); past that, read each parent''s result with get_job.
Errors: JC001 the results are over 8 MiB together (field job_id).
Example:
select jobctl.parent_results(42);  -- {"40": {"rows": 120}, "41": {"rows": 7}}';
