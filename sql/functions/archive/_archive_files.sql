-- jobctl._archive_files: the object archive's manifest, every file or one tenant's (p_tenant_id), in
-- day, tenant and file order: `jobctl archive list` and `jobctl archive verify` (which reads each
-- file back against its row count and SHA-256). As the schema owner. Reads: archive_manifest.
create or replace function jobctl._archive_files(p_tenant_id text default null)
returns table (
    file_id bigint, tenant_id text, day date, url text, job_count bigint, bytes bigint, min_job_id bigint,
    max_job_id bigint, sha256 text, written_at timestamptz, rewritten_at timestamptz
)
language sql
stable
as $$
    select m.file_id, m.tenant_id, m.job_day, m.url, m.job_count, m.bytes, m.min_job_id, m.max_job_id, m.sha256,
        m.written_at, m.rewritten_at
    from jobctl.archive_manifest as m
    where p_tenant_id is null or m.tenant_id = p_tenant_id
    order by m.job_day, m.tenant_id, m.file_id
$$;
