-- jobctl._archive_tenants: the files one unit of the export (jobctl._archive_units) makes: its jobs
-- created before p_before, grouped by tenant and UTC day (one file each), with how many rows each
-- holds now, in tenant and day order. The exporter reads each group's rows (jobctl._archive_chunk);
-- jobctl._archive_commit checks, under its lock, that the unit holds exactly the rows written.
-- Refuses a part that is not the archive's (JC001, jobctl._archive_part). As the schema owner.
-- Reads: the unit's partition.
create or replace function jobctl._archive_tenants(p_part regclass, p_before timestamptz)
returns table (tenant_id text, day date, job_count bigint)
language plpgsql
stable
as $$
begin
    return query execute format(
        'select j.tenant_id, (j.created_at at time zone ''UTC'')::date, count(*)
        from %s as j
        where j.created_at < $1
        group by 1, 2
        order by 1, 2', jobctl._archive_part(p_part)
    ) using p_before;
end
$$;
