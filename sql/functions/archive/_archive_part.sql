-- jobctl._archive_part: p_part itself if it is a unit of the object archive's export
-- (jobctl._archive_units: a partition of jobctl.job_archive, or its default partition), else
-- JC001: the export's functions build their statements on it, and nothing else may be read, locked
-- or dropped through them. Reads: the catalog.
create or replace function jobctl._archive_part(p_part regclass)
returns regclass
language plpgsql
stable
as $$
begin
    if p_part is null or not exists (
        select from pg_catalog.pg_inherits as i
        where i.inhrelid = p_part and i.inhparent = 'jobctl.job_archive'::regclass
    ) then
        raise exception using errcode = 'JC001',
            message = format('%s is not a partition of jobctl.job_archive', coalesce(p_part::text, 'NULL')),
            detail = 'field: p_part', hint = 'Pass a part that jobctl._archive_units returned.';
    end if;
    return p_part;
end
$$;
