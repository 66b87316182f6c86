-- jobctl.job_steps: a job's saved steps, and the outcomes of its await_event calls (steps named
-- event:<name>), in the order they were saved. Another tenant's job is as unknown as a missing one:
-- no rows. Reads: _step.
create or replace function jobctl.job_steps(job_id bigint)
returns table (step text, result jsonb, saved_at timestamptz, attempt integer)
language sql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
    select s.step, s.result, s.saved_at, s.attempt
    from jobctl._step as s
    where s.job_id = job_steps.job_id
        and s.tenant_id = any(coalesce((select jobctl._acting_tenants('jobs:read')), array[s.tenant_id]))
    order by s.saved_at, s.step
$$;

comment on function jobctl.job_steps(bigint) is
'The saved steps of a job (save_step) and the outcomes of its await_event calls (steps named
event:<name>, with {"outcome": "received", "payload": ...} or {"outcome": "timed_out"}), in the order they
were saved, with the attempt that saved each. Steps are kept while the job is hot (jobctl.retention.hot). A job
that is not the caller''s tenants'', or unknown: no rows.
Errors: none.
Example:
select step, result from jobctl.job_steps(42);';
