-- jobctl._archive_rewritten: record a manifest file that an erasure (jobctl._archive_erasures) wrote
-- again: p_file {rows, bytes, min_job_id, max_job_id, sha256, tmp_url} are the new file's (its
-- archive_writing row, tmp_url, goes), or p_file NULL for a file that is gone (every row erased, or
-- deleted by a lifecycle rule): its manifest row goes. Renews the exporter's lease first (false:
-- another run took it over, and nothing is recorded). As the schema owner (granted to no role).
-- Locks: the lease row. Writes: _archive_lease, archive_manifest, archive_writing (delete).
create or replace function jobctl._archive_rewritten(
    p_holder uuid, p_lease_seconds integer, p_file_id bigint, p_file jsonb
)
returns boolean
language plpgsql
as $$
begin
    if not jobctl._archive_lease(p_holder, p_lease_seconds) then
        return false;
    end if;
    if p_file is null then
        delete from jobctl.archive_manifest as m where m.file_id = p_file_id;
        return true;
    end if;
    update jobctl.archive_manifest as m
    set job_count = (p_file ->> 'rows')::bigint, bytes = (p_file ->> 'bytes')::bigint,
        min_job_id = (p_file ->> 'min_job_id')::bigint, max_job_id = (p_file ->> 'max_job_id')::bigint,
        sha256 = p_file ->> 'sha256', rewritten_at = now()
    where m.file_id = p_file_id;
    delete from jobctl.archive_writing as w where w.url = p_file ->> 'tmp_url';
    return true;
end
$$;
