-- jobctl.submit_workflow: submit a DAG of named jobs at once, all or nothing. See jobctl._submit
-- for locks and writes, jobctl._link_parents for the edges.
create or replace function jobctl.submit_workflow(jobs jsonb, on_parent_failure text default 'cancel')
returns table (name text, job_id bigint, workflow_id bigint)
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_ids bigint[];
begin
    if jsonb_typeof(jobs) = 'array' and jsonb_array_length(jobs) = 0 then
        raise exception using errcode = 'JC001', message = 'jobs must hold 1 to 10000 jobs',
            detail = 'field: jobs', hint = 'Nothing was submitted.';
    end if;
    select array_agg(s.job_id order by s.ord) into v_ids
    from jobctl._submit(
        jobctl._job_specs(jobs, true, jobctl._parent_policy(submit_workflow.on_parent_failure)), true, p_workflow => true,
        p_names => array(select a.e ->> 'name' from jsonb_array_elements(jobs) with ordinality as a (e, i) order by a.i)
    ) with ordinality as s (job_id, duplicate, ord);
    return query
    select a.e ->> 'name', v_ids[a.i::integer], v_ids[1]
    from jsonb_array_elements(jobs) with ordinality as a (e, i)
    order by a.i;
end
$$;

comment on function jobctl.submit_workflow(jsonb, text) is
'Submit a workflow: a JSON array of jobs (submit_jobs'' keys), each with a name (1-200 characters, unique
in the call) and depends_on naming jobs listed before it (and/or giving ids of existing jobs of its tenant). All
are inserted at once; a job with parents is waiting until the last completes, then pending, exactly once however
its parents'' completions race. on_parent_failure (cancel or wait) is the default of each job''s own: what a dead
or cancelled parent does to it. A job reads its parents'' results with jobctl.parent_results. Returns (name,
job_id, workflow_id) in input order; workflow_id (the first job''s id) and its name (workflow_name) are on each
job (get_job, list_jobs, find_jobs). 1 to 10,000 jobs.
Errors: JC001 a bad field (named with its element, as jobs[3].name): a missing or repeated name, a depends_on
naming no earlier job (no cycle can be written) or a job not of the tenant, a dedup_key in a workflow whose jobs
depend on each other, a bad on_parent_failure, JC002 a payload over 64 KiB, JC003 a bad backoff, JC004 over
max_pending, JC005 over the submit rate, JC008 the tenant encrypts and the session lacks its key, 42501 another
tenant.
Example:
select * from jobctl.submit_workflow(''[
  {"name": "extract", "tenant_id": "acme", "queue": "etl", "payload": {"day": "2026-12-01"}},
  {"name": "clean",   "tenant_id": "acme", "queue": "etl", "payload": {}, "depends_on": ["extract"]},
  {"name": "report",  "tenant_id": "acme", "queue": "etl", "payload": {}, "depends_on": ["clean", 41]}
]'');';
