-- jobctl.locate_job: where the job with this id is, in one call: in the database (`job`: the row
-- get_job returns), or, when the database has no such job, in the object archive (`files`: the
-- Parquet files jobctl.archived_job names, [{url, tenant_id, day, bytes, forgotten}], oldest day
-- first). Zero rows when neither holds it for the caller's tenants. The clients' get_job fetches a
-- named file (SQL cannot read Parquet) and keeps the row with this id (python/jobctl/archive.py).
-- Reads: as get_job and archived_job.
create or replace function jobctl.locate_job(job_id bigint)
returns table (job jobctl.job_info, files jsonb)
language sql
security definer
set search_path = pg_catalog, pg_temp
stable
as $$
    with hot as (
        select g from jobctl.get_job(locate_job.job_id) as g
    )
    select h.g, null::jsonb from hot as h
    union all
    select null::jobctl.job_info, jsonb_agg(jsonb_build_object(
        'url', a.url, 'tenant_id', a.tenant_id, 'day', a.day, 'bytes', a.bytes, 'forgotten', a.forgotten
    ) order by a.n)
    from jobctl.archived_job(locate_job.job_id) with ordinality as a (url, tenant_id, day, bytes, forgotten, n)
    where not exists (select from hot)
    having count(*) > 0
$$;

comment on function jobctl.locate_job(bigint) is
'Where the job with this id is: `job`, the job as get_job returns it, when it is in the database; else `files`,
the object-archive files (jobctl.retention.archive_url) that may hold it, as archived_job returns them, a JSON
array of {url, tenant_id, day, bytes, forgotten}. Zero rows if neither holds it, or it is another tenant''s. The
clients'' get_job reads a named file (SQL cannot read Parquet).
Errors: JC008 jobctl.payload_keys is not JSON.
Example:
select (job).state, files from jobctl.locate_job(42);';
