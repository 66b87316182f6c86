-- jobctl.archived_job: where a job that left the database for the object archive
-- is: the files whose job-id range holds it, of the caller's tenants only. SQL cannot read Parquet:
-- get_job's and job_history's Python fallback (python/jobctl/archive.py) reads the file and keeps
-- the row with this id, unless its subject_key is one of `forgotten` (forget_subject's erasures
-- that `jobctl archive run` has not applied to the files yet). Reads: archive_manifest (the id-range
-- index), archive_erasure.
create or replace function jobctl.archived_job(job_id bigint)
returns table (url text, tenant_id text, day date, bytes bigint, forgotten text[])
language sql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
    -- another tenant's file is as unknown as a missing one
    select m.url, m.tenant_id, m.job_day, m.bytes,
        coalesce((select array_agg(e.subject_key) from jobctl.archive_erasure as e where e.tenant_id = m.tenant_id), '{}')
    from jobctl.archive_manifest as m
    where int8range(m.min_job_id, m.max_job_id, '[]') @> archived_job.job_id
        and m.tenant_id = any(coalesce((select jobctl._acting_tenants('jobs:read')), array[m.tenant_id]))
    order by m.job_day, m.file_id
$$;

comment on function jobctl.archived_job(bigint) is
'The object-archive files (jobctl.retention.archive_url, `jobctl archive run`) that may hold the job with this
id: url, tenant, day and size of each, and the tenant''s subject keys whose erasure (forget_subject) the files still
await, whose rows a reader must skip. Zero rows when no file of the caller''s tenants covers the id. The
clients'' get_job and job_history read the file when the database has no such job.
Errors: none.
Example:
select url, day from jobctl.archived_job(42);';
