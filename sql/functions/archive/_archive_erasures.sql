-- jobctl._archive_erasures: forget_subject's requests that the files still await
-- (jobctl.archive_erasure), a row per file of each tenant that has one (file columns NULL when the
-- tenant has no file), in tenant, day and file order: the exporter reads each file, writes it again
-- without the subjects' rows (jobctl._archive_rewritten), then marks the tenant's requests up to
-- last_id done (jobctl._archive_erased). As the schema owner. Reads: archive_erasure, archive_manifest.
create or replace function jobctl._archive_erasures()
returns table (tenant_id text, subjects text[], last_id bigint, file_id bigint, url text, sha256 text)
language sql
stable
as $$
    select e.tenant_id, e.subjects, e.last_id, m.file_id, m.url, m.sha256
    from (
        select x.tenant_id, array_agg(x.subject_key order by x.erasure_id) as subjects, max(x.erasure_id) as last_id
        from jobctl.archive_erasure as x
        group by x.tenant_id
    ) as e
    left join jobctl.archive_manifest as m on m.tenant_id = e.tenant_id
    order by e.tenant_id, m.job_day, m.file_id
$$;
