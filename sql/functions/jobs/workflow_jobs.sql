-- jobctl.workflow_jobs: the jobs of a workflow (its id: its first job's), oldest first, as find_jobs
-- shows them (hot and archived, the caller's tenants only). submit_workflow takes a workflow's ids
-- (at most 1,000 jobs) from the job id sequence in one statement, in order, so the jobs are looked
-- up among the 1,000 ids from the workflow's own on, in steps of the sequence's increment (a shard's
-- ids step by the shard count: jobctl.init_shard). Ids that concurrent submits take in between push
-- a large workflow's last jobs past that window: they are not listed. Reads: job, job_archive,
-- _running (find_jobs).
create or replace function jobctl.workflow_jobs(workflow_id bigint)
returns setof jobctl.job_info
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
begin
    if workflow_id is null or workflow_id < 1 then
        raise exception using errcode = 'JC001',
            message = format('workflow_id must be a positive job id, not %s', coalesce(workflow_id::text, 'NULL')),
            detail = 'field: workflow_id', hint = 'A workflow''s id is the id of its first job (submit_workflow).';
    end if;
    return query
    select j.*
    from jobctl.find_jobs(
        jsonb_build_object('job_ids', (
            select jsonb_agg(g.i)
            from pg_catalog.pg_sequence as s
            cross join lateral generate_series(
                workflow_jobs.workflow_id, workflow_jobs.workflow_id + 999 * s.seqincrement, s.seqincrement
            ) as g (i)
            where s.seqrelid = 'jobctl.job_id_seq'::regclass
        )),
        null, 1000
    ) as j
    where j.workflow_id = workflow_jobs.workflow_id
    order by j.job_id;
end
$$;

comment on function jobctl.workflow_jobs(bigint) is
'The jobs of a workflow, oldest first: the job_info rows (as find_jobs shows them, hot and archived)
whose workflow_id is the given one, which is the id of the workflow''s first job. Another tenant''s
workflow, an unknown id or a job that is not a workflow''s first: no rows. The jobs are looked up among the
1,000 ids from the workflow''s on: of a large workflow submitted beside other submits, the last jobs may be
missing.
Errors: JC001 for a workflow_id that is NULL or below 1.
Example:
select job_id, state from jobctl.workflow_jobs(1001);';
